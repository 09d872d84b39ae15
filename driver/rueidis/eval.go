package rueidisdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// Eval runs a script on the master and waits for its outcome, which Start
// hands over as it comes (see driver.Master). The call goes on the
// lock's connection to the server (see line), pipelined with the lock's
// other calls. The guard's questions, when due, and the script go out as
// one DoMulti, which rueidis writes as one batch on that connection and
// answers in order. The questions are due on a fresh connection (see
// driver.Check.Due): a new one, the first one included, which is the only
// way to another server process. Eval marks the connection whose answers
// it returns as answered as it returns them: a caller that must take the
// answers before a call on that connection goes without questions uses
// Start, which marks it only once done has returned. A call that meets a connection found dead is tried again, on a
// new one, up to twice, within ctx; without a deadline in ctx, WithTimeout
// bounds each try.
func (m *Master) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	rep, answered, err := m.eval(ctx, call)
	answered.answer()
	return rep, err
}

// eval is Eval, save that it leaves marking the connection answered to its
// caller, once the reply is handed over: answered is the connection whose
// answers rep holds, nil when it holds none.
func (m *Master) eval(ctx context.Context, call driver.Call) (rep driver.Reply, answered *held, err error) {
	if call.Script == nil {
		return driver.Reply{}, nil, fmt.Errorf("%w: rueidisdriver: call without a script", ErrInvalid)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	var retry bool
	for try := 0; try < 3; try++ {
		rep, answered, retry, err = m.evalOnce(ctx, call)
		rep.Lost = try > 0 || retry
		if !retry {
			break
		}
	}
	return rep, answered, err
}

// evalOnce runs call once. answered is the connection whose answers rep
// holds, if any; retry reports an error of a connection that died before
// the call.
func (m *Master) evalOnce(ctx context.Context, call driver.Call) (driver.Reply, *held, bool, error) {
	if m.cluster {
		return m.evalCluster(ctx, call)
	}
	return m.onNode(ctx, m.standalone, &m.one, "", call)
}

// onNode runs call once on l's connection to the one server named server
// ("" for a standalone master), taken through the client node returns when
// l has none. A connection found broken is closed, and the next call
// takes a new one; the error of one rueidis could not open, a reply of
// the master's, is returned as a driver.Error (see refusal).
func (m *Master) onNode(ctx context.Context, node func() (rueidis.Client, error), l *line, server string, call driver.Call) (driver.Reply, *held, bool, error) {
	h, err := l.conn(ctx, node)
	if err != nil {
		return driver.Reply{Server: server}, nil, false, err
	}
	rep, checks, retry, err := m.run(ctx, h, server, call)
	if broken(ctx, err) {
		l.drop(h, err)
		err = refusal(err)
	}
	if rep.Answers == nil || !checks {
		return rep, nil, retry, err
	}
	return rep, h, retry, err
}

// broken reports whether err, a call's error, shows the connection no use
// to the lock: an error other than a reply of the master's or the end of
// ctx, or a READONLY reply. A server that answers READONLY is a replica
// now, as after a Sentinel failover; the client's new connections lead to
// the master it knows, while one handed out before stays with the replica.
func broken(ctx context.Context, err error) bool {
	var de driver.Error
	if errors.As(err, &de) {
		return de.Code() == "READONLY"
	}
	return err != nil && ctx.Err() == nil
}

// standalone returns the client, for a standalone master's connection.
func (m *Master) standalone() (rueidis.Client, error) { return m.client, nil }

// run sends call on h, a connection to server, with the check's questions
// when they are due on it: while it is fresh, or always when the check
// says so; checks reports that they were asked because h is fresh, so that
// taking their answers checks it (a check that asks always leaves it as it
// was: see driver.Master.Start). retry reports an error of a connection
// that died before the call.
func (m *Master) run(ctx context.Context, h *held, server string, call driver.Call) (rep driver.Reply, checks, retry bool, err error) {
	rep.Server = server
	var check *driver.Check
	if call.Check != nil {
		check = call.Check(server)
	}
	asked := check.Due(h.fresh())
	checks = asked && !check.Always
	var questions [][]string
	if asked {
		questions = check.Commands()
	}
	v, answers, err := replies(h.b.do(ctx, questionCmds(h.dc, questions), evalsha(h.dc, call, check, asked)), len(questions))
	if isNoScript(err) {
		// The master lost its script cache: send the source instead, with
		// the questions again, so that their answers come from the
		// connection that runs the script.
		v, answers, err = replies(h.b.do(ctx, questionCmds(h.dc, questions), eval(h.dc, call, check, asked)), len(questions))
	}
	rep.Answers = answers
	if err != nil && stale(err) && ctx.Err() == nil {
		return rep, checks, true, err
	}
	if err != nil {
		return rep, checks, false, err
	}
	h.serve()
	rep.Value = v
	return rep, checks, false, nil
}

// evalsha builds call's EVALSHA, with the script's arguments as sent (see
// driver.Call.Argv): Args and, for a script that takes it, the hint,
// appended here rather than copied into a new slice.
func evalsha(client rueidis.CommandClient, call driver.Call, check *driver.Check, asked bool) rueidis.Completed {
	cmd := client.B().Evalsha().Sha1(call.Script.SHA).Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(call.Args...)
	if call.Script.TakesHint {
		cmd = cmd.Arg(call.Hint(check, asked))
	}
	return cmd.Build()
}

// eval is evalsha with the script's source (EVAL).
func eval(client rueidis.CommandClient, call driver.Call, check *driver.Check, asked bool) rueidis.Completed {
	cmd := client.B().Eval().Script(call.Script.Src).Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(call.Args...)
	if call.Script.TakesHint {
		cmd = cmd.Arg(call.Hint(check, asked))
	}
	return cmd.Build()
}

// replies reads the replies to commands' questions (asked of them) and
// script: the script's reply in the neutral form, the answers (nil without
// questions), and the script's error, a driver.Error for an error reply.
func replies(res []rueidis.RedisResult, asked int) (any, []any, error) {
	if len(res) != asked+1 {
		return nil, nil, fmt.Errorf("rueidisdriver: %d replies to %d commands", len(res), asked+1)
	}
	var answers []any
	if asked > 0 {
		answers = make([]any, asked)
		for i := range asked {
			a, err := neutral(res[i])
			if err != nil {
				return nil, nil, err
			}
			answers[i] = a
		}
	}
	v, err := neutral(res[asked])
	if err != nil {
		return nil, answers, err
	}
	if e, ok := v.(driver.Error); ok {
		return nil, answers, e
	}
	return v, answers, nil
}

func isNoScript(err error) bool {
	var de driver.Error
	return errors.As(err, &de) && de.Code() == "NOSCRIPT"
}

// stale reports errors of a connection that died before the call, as after
// a master restart; a fresh connection may well succeed. The caller's ctx is
// still alive: a deadline error is then the one a connection died of, when
// an earlier call's deadline ended it while it was the only one waiting
// (rueidis' pipe.syncDoMulti), and the call never went out.
func stale(err error) bool {
	var de driver.Error
	switch {
	case errors.As(err, &de):
		return false
	case errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return driver.Stale(err) || errors.Is(err, rueidis.ErrClosing) || errors.Is(err, rueidis.ErrDedicatedClientRecycled)
}
