package goredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/driver"
)

// Start runs a script on the master and hands its reply to done (see
// driver.Master): the call is queued on a connection of the master and
// goes out with the next batch on it; done runs on the goroutine that reads
// the batch's replies, or at ctx's deadline if that comes first. A ctx
// cancelled before its deadline does not cut the call short: its reply,
// which the lock can use, is seldom more than a round trip away.
func (m *Master) Start(ctx context.Context, call driver.Call, done driver.Done) {
	if call.Script == nil {
		done.Returned(driver.Reply{}, invalid("the call has no script"))
		return
	}
	if err := ctx.Err(); err != nil {
		done.Returned(driver.Reply{}, err)
		return
	}
	if err := m.enter(); err != nil {
		done.Returned(driver.Reply{}, err)
		return
	}
	r := &request{m: m, ctx: ctx, call: call, done: done}
	if dl, ok := ctx.Deadline(); ok {
		r.timer = time.AfterFunc(time.Until(dl), r.expire)
	}
	m.dispatch(r)
}

// Eval runs a script on the master, or on the master of the slot of the
// call's first key in a cluster, and waits for its reply, as Start hands it
// over. It returns by ctx's deadline, or its cancellation; a connection
// found dead is replaced, up to twice, within ctx.
func (m *Master) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	ch := make(chan outcome, 1) // buffered: a reply after the caller left is dropped
	m.Start(ctx, call, outcomeTo(ch))
	select {
	case o := <-ch:
		return o.rep, o.err
	case <-ctx.Done():
	}
	select {
	case o := <-ch: // delivered as ctx ended
		return o.rep, o.err
	default:
		return driver.Reply{}, ctx.Err()
	}
}

type outcome struct {
	rep driver.Reply
	err error
}

type outcomeTo chan outcome

func (c outcomeTo) Returned(rep driver.Reply, err error) { c <- outcome{rep, err} }

// dispatch places r on a lane of its server. A cluster's route may read
// the slot map from the network, so it runs on a goroutine of its own,
// which r's inflight count covers.
func (m *Master) dispatch(r *request) {
	if m.single != nil {
		m.single.place(r)
		return
	}
	go func() {
		t, err := m.cluster.route(r.ctx, r.call.Keys)
		if err != nil {
			r.finish(driver.Reply{}, serverError(err, true))
			return
		}
		t.place(r)
	}()
}

// scriptArgs returns EVALSHA with its arguments: digest, key count, keys,
// arguments as sent (driver.Call.Argv, built here in place). The strings
// are passed by pointer into one slice, which go-redis writes as it writes
// strings: boxing each would cost an allocation per argument.
func scriptArgs(call driver.Call, check *driver.Check, asked bool) []any {
	n := len(call.Keys) + len(call.Args)
	if call.Script.TakesHint {
		n++
	}
	strs := make([]string, 0, 1+n)
	strs = append(strs, call.Script.SHA)
	strs = append(strs, call.Keys...)
	strs = append(strs, call.Args...)
	if call.Script.TakesHint {
		strs = append(strs, call.Hint(check, asked))
	}
	out := make([]any, 3+n)
	out[0], out[1], out[2] = "EVALSHA", &strs[0], len(call.Keys)
	for i := range strs[1:] {
		out[3+i] = &strs[1+i]
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

// pipeline sends the commands on pipe, its lane's, in one round trip, and
// returns them in out, reused. Its error is one of the pipeline as a whole:
// go-redis returns the error reply that failed the connection's setup (a
// WRONGPASS, say) without setting it on any command, which then has neither
// a value nor an error. Error replies to single commands, and a connection
// failing under them, are left on the commands.
func pipeline(ctx context.Context, pipe redis.Pipeliner, cmds [][]any, out []*redis.Cmd) ([]*redis.Cmd, error) {
	out = out[:0]
	for _, c := range cmds {
		out = append(out, pipe.Do(ctx, c...))
	}
	_, err := pipe.Exec(ctx)
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
