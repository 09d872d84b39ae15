package goredis

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
)

// Eval runs a script on the master, or on the master of the slot of the
// call's first key in a cluster: see driver.Master. A connection found dead
// is replaced, up to twice, within ctx.
func (m *Master) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	if call.Script == nil {
		return driver.Reply{}, invalid("the call has no script")
	}
	if err := m.enter(); err != nil {
		return driver.Reply{}, err
	}
	defer m.inflight.Done()
	var (
		rep driver.Reply
		err error
	)
	for try := 0; try < 3; try++ {
		rep, err = within(m, ctx, func(ctx context.Context) (driver.Reply, error) {
			t, err := m.route(ctx, call.Keys)
			if err != nil {
				return driver.Reply{}, err
			}
			rep, err := t.eval(ctx, call, m.cluster != nil)
			if errors.Is(err, ErrRedirected) {
				m.cluster.client.ReloadState(ctx) // in the background
			}
			return rep, err
		}, nil)
		retry := err != nil && stale(err) && ctx.Err() == nil
		rep.Lost = try > 0 || retry
		if !retry {
			break
		}
	}
	return rep, err
}

// eval runs the call on one connection of the target's client: the check's
// questions ahead of the script when they are due, the script by its digest,
// and by its source if the server lacks it.
//
// A go-redis client does not say whether the connection it hands out is
// one it opened just then. So the dial count is read before the call (to
// decide whether the questions are due, and to report) and again after. If
// it moved and the questions did not go, the connection may be new, and the
// server behind it one the guard has never seen: the questions are then
// asked after the script, on the same connection, before the reply is
// returned. A connection is one server process for its whole life, so the
// answers describe the server that ran the script, as they would ahead of
// it. The script's hint then named what the guard knew before; the script
// checks it against the master's own stamp and reads INFO itself when they
// differ.
func (t *target) eval(ctx context.Context, call driver.Call, cluster bool) (driver.Reply, error) {
	if err := t.ready.wait(ctx, t.client); err != nil {
		return driver.Reply{Server: t.server}, serverError(err, cluster)
	}
	conn := t.client.Conn()
	defer conn.Close()
	var check *driver.Check
	if call.Check != nil {
		check = call.Check(t.server)
	}
	before := t.dials.load()
	rep := driver.Reply{Server: t.server, Dials: before}
	asked := check.Due(before)
	script := scriptArgs(call, check, asked)
	var questions [][]any
	if asked {
		var err error
		if questions, err = commands(check.Commands()); err != nil {
			return rep, err
		}
	}
	cmds, err := pipeline(ctx, conn, append(questions, script))
	if err != nil {
		return rep, serverError(err, cluster)
	}
	if asked {
		if rep.Answers, err = answers(cmds[:len(questions)]); err != nil {
			return rep, err
		}
	}
	v, err := cmds[len(questions)].Result()
	if isNoScript(err) {
		// The server lost its script cache: send the source instead.
		script[0], script[1] = "EVAL", call.Script.Src
		var again []*redis.Cmd
		if again, err = pipeline(ctx, conn, [][]any{script}); err != nil {
			return rep, serverError(err, cluster)
		}
		v, err = again[0].Result()
	}
	if err == redis.Nil {
		v, err = nil, nil
	}
	if err != nil {
		return rep, serverError(err, cluster)
	}
	if check != nil && !asked {
		if after := t.dials.load(); after != before {
			if rep.Answers, err = ask(ctx, conn, check.Commands()); err != nil {
				return rep, err
			}
			rep.Dials = after
		}
	}
	rep.Value = neutral(v)
	return rep, nil
}

// scriptArgs returns EVALSHA with its arguments: digest, key count, keys,
// arguments.
func scriptArgs(call driver.Call, check *driver.Check, asked bool) []any {
	argv := call.Argv(check, asked)
	out := make([]any, 0, 3+len(call.Keys)+len(argv))
	out = append(out, "EVALSHA", call.Script.SHA, len(call.Keys))
	for _, k := range call.Keys {
		out = append(out, k)
	}
	for _, a := range argv {
		out = append(out, a)
	}
	return out
}

// commands returns the questions as go-redis takes them.
func commands(questions [][]string) ([][]any, error) {
	out := make([][]any, len(questions))
	for i, q := range questions {
		if len(q) == 0 {
			return nil, invalid("check question %d is empty", i)
		}
		out[i] = make([]any, len(q))
		for j, a := range q {
			out[i][j] = a
		}
	}
	return out, nil
}

// pipeline sends the commands on conn in one round trip. Its error is one
// of the pipeline as a whole: go-redis returns the error reply that failed
// the connection's setup (a WRONGPASS, say) without setting it on any
// command, which then has neither a value nor an error. Error replies to
// single commands, and a connection failing under them, are left on the
// commands.
func pipeline(ctx context.Context, conn *redis.Conn, cmds [][]any) ([]*redis.Cmd, error) {
	out := make([]*redis.Cmd, 0, len(cmds))
	_, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range cmds {
			out = append(out, p.Do(ctx, c...))
		}
		return nil
	})
	if len(out) != len(cmds) {
		return nil, errors.New("goredis: the pipeline lost commands")
	}
	if err == nil {
		return out, nil
	}
	for _, c := range out {
		if c.Err() != nil {
			return out, nil
		}
	}
	return nil, err
}

// answers returns the replies to the questions, or the error of a
// connection that failed under them.
func answers(cmds []*redis.Cmd) ([]any, error) {
	out := make([]any, len(cmds))
	for i, c := range cmds {
		var err error
		if out[i], err = answer(c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ask sends the questions on conn in one round trip and returns the answers.
func ask(ctx context.Context, conn *redis.Conn, questions [][]string) ([]any, error) {
	qs, err := commands(questions)
	if err != nil {
		return nil, err
	}
	cmds, err := pipeline(ctx, conn, qs)
	if err != nil {
		return nil, serverError(err, false)
	}
	return answers(cmds)
}

// route returns the server a call with these keys goes to.
func (m *Master) route(ctx context.Context, keys []string) (*target, error) {
	if m.single != nil {
		return m.single, nil
	}
	return m.cluster.route(ctx, keys)
}
