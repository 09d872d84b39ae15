package rueidisdriver

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// Start runs a script on the master and hands the outcome to done (see
// driver.Master), as Eval would return it. On a standalone or Sentinel master whose
// connection is open, the call is queued for the connection's sender (see
// batcher), and done runs on the sender's goroutine once the reply is in:
// no goroutine waits for it. A call whose deadline passes while it waits
// for a batch in flight is not sent, and done takes ctx's error once that
// batch has returned. Otherwise (a cluster, a connection still to be
// opened, one found dead under the call, a script the master has not
// cached) a goroutine runs Eval, or finishes the call as Eval would.
func (m *Master) Start(ctx context.Context, call driver.Call, done driver.Done) {
	var h *held
	if _, ok := ctx.Deadline(); ok && !m.cluster && call.Script != nil && ctx.Err() == nil {
		h = m.one.ready()
	}
	if h == nil {
		go func() { done.Returned(m.Eval(ctx, call)) }()
		return
	}
	var check *driver.Check
	if call.Check != nil {
		check = call.Check("")
	}
	asked := check.Due(h.n)
	var questions [][]string
	if asked {
		questions = check.Commands()
	}
	s := &started{m: m, h: h, ctx: ctx, call: call, asked: len(questions), done: done}
	h.b.start(ctx, questionCmds(h.dc, questions), evalsha(h.dc, call, check, asked), s)
}

// started is a call that Start queued, until its replies are in.
type started struct {
	m     *Master
	h     *held
	ctx   context.Context
	call  driver.Call
	asked int // questions sent ahead of the script
	done  driver.Done
}

// sent finishes the call as Eval would, on the sender's goroutine, or in a
// goroutine of its own when that takes another round trip.
func (s *started) sent(res []rueidis.RedisResult) {
	v, answers, err := replies(res, s.asked)
	rep := driver.Reply{Answers: answers, Dials: s.h.n}
	if err == nil {
		rep.Value = v
		s.done.Returned(rep, nil)
		return
	}
	alive := s.ctx.Err() == nil
	if broken(s.ctx, err) {
		s.m.one.drop(s.h) // as onNode does
	}
	if isNoScript(err) || (alive && stale(err)) {
		lost := !isNoScript(err)
		go func() {
			rep, err := s.m.Eval(s.ctx, s.call)
			rep.Lost = rep.Lost || lost
			s.done.Returned(rep, err)
		}()
		return
	}
	s.done.Returned(rep, err)
}
