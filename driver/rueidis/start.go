package rueidisdriver

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// Start runs a script on the master and hands the outcome to done (see
// driver.Master), as Eval would return it. On a standalone or Sentinel
// master whose connection is open, the call is queued for the connection's
// sender (see batcher), and done runs on the sender's goroutine once the
// reply is in: no goroutine waits for it. A call whose deadline passes
// while it waits for a batch in flight is not sent, and done takes ctx's
// error once that batch has returned. Otherwise (a cluster, a connection
// still to be opened, one found dead under the call, a script the master
// has not cached) a goroutine runs the call as Eval does. Either way, the
// connection whose answers done takes stays fresh until done has
// returned: every call on it meanwhile carries the questions too.
func (m *Master) Start(ctx context.Context, call driver.Call, done driver.Done) {
	var h *held
	if _, ok := ctx.Deadline(); ok && !m.cluster && call.Script != nil && ctx.Err() == nil {
		h = m.one.ready()
	}
	if h == nil {
		go m.evalFor(ctx, call, done, false)
		return
	}
	var check *driver.Check
	if call.Check != nil {
		check = call.Check("")
	}
	asked := check.Due(h.fresh())
	var questions [][]string
	if asked {
		questions = check.Commands()
	}
	s := &started{m: m, h: h, ctx: ctx, call: call, asked: len(questions), checks: asked && !check.Always, done: done}
	h.b.start(ctx, questionCmds(h.dc, questions), evalsha(h.dc, call, check, asked), s)
}

// evalFor runs call as Eval does and hands the outcome to done, Lost set
// when lost says so; then, done having returned, marks the connection
// whose answers it took as answered.
func (m *Master) evalFor(ctx context.Context, call driver.Call, done driver.Done, lost bool) {
	rep, answered, err := m.eval(ctx, call)
	rep.Lost = rep.Lost || lost
	done.Returned(rep, err)
	answered.answer()
}

// started is a call that Start queued, until its replies are in.
type started struct {
	m     *Master
	h     *held
	ctx   context.Context
	call  driver.Call
	asked int // questions sent ahead of the script
	// checks: they were sent because h is fresh, and taking their answers
	// checks it (a check that asks always leaves it as it was).
	checks bool
	done   driver.Done
}

// sent finishes the call as Eval would, on the sender's goroutine, or in a
// goroutine of its own when that takes another round trip.
func (s *started) sent(res []rueidis.RedisResult) {
	v, answers, err := replies(res, s.asked)
	rep := driver.Reply{Answers: answers}
	if err == nil {
		s.h.serve()
		rep.Value = v
		s.returned(rep, nil)
		return
	}
	alive := s.ctx.Err() == nil
	if broken(s.ctx, err) {
		s.m.one.drop(s.h, err) // as onNode does
		err = refusal(err)
	}
	if isNoScript(err) || (alive && stale(err)) {
		// The answers, if any, are not handed over: the call goes again,
		// with the questions, and the connection stays fresh.
		go s.m.evalFor(s.ctx, s.call, s.done, !isNoScript(err))
		return
	}
	s.returned(rep, err)
}

// returned hands rep to done and then, when it holds answers, marks the
// call's connection as answered.
func (s *started) returned(rep driver.Reply, err error) {
	s.done.Returned(rep, err)
	if rep.Answers != nil && s.checks {
		s.h.answer()
	}
}
