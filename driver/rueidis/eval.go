package rueidisdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/driver"
)

// Eval runs a script on the master: see driver.Master. The guard's questions
// and the script go out as one DoMulti, which rueidis writes as one batch on
// one connection and answers in order. A call that meets a connection
// found dead is tried again, up to twice, within ctx; without a deadline in
// ctx, WithTimeout bounds each try.
//
// Without WithDials, the call is pipelined with the client's other commands,
// on whichever connection rueidis picks, and counts as one dial of its own:
// the guard's questions go with every call. With WithDials, the call takes
// a dedicated connection of the client's first, reads the dial count, and
// sends the questions only when a connection was opened since the guard's
// last answers, as the redigo driver does.
func (m *Master) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	if call.Script == nil {
		return driver.Reply{}, fmt.Errorf("%w: call without a script", ErrInvalid)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	var (
		rep   driver.Reply
		err   error
		retry bool
	)
	for try := 0; try < 3; try++ {
		rep, retry, err = m.evalOnce(ctx, call)
		rep.Lost = try > 0 || retry
		if !retry {
			break
		}
	}
	return rep, err
}

// evalOnce runs call once. retry reports an error of a connection that
// died before the call.
func (m *Master) evalOnce(ctx context.Context, call driver.Call) (driver.Reply, bool, error) {
	if m.cluster {
		return m.evalCluster(ctx, call)
	}
	return m.onNode(ctx, m.client, "", call)
}

// dedicate takes a dedicated connection of client's within ctx. rueidis
// dials a new one without a ctx, bounded by the client's dial timeout; one
// that arrives after ctx ended goes back to the client's pool.
func dedicate(ctx context.Context, client rueidis.Client) (rueidis.DedicatedClient, func(), error) {
	type dedicated struct {
		dc      rueidis.DedicatedClient
		release func()
	}
	got := make(chan dedicated, 1)
	go func() {
		dc, release := client.Dedicate()
		got <- dedicated{dc, release}
	}()
	select {
	case d := <-got:
		return d.dc, d.release, nil
	case <-ctx.Done():
		go func() { (<-got).release() }()
		return nil, nil, ctx.Err()
	}
}

// run sends call through cc, on one connection to server. With dial
// counts, dials is the count of connections opened to server when cc got
// its connection, and the check's questions go when it is due by it.
// Without (dials is nil), the connection is whichever rueidis picks, new or
// not, so the questions go whenever the call has a check; and the reply is
// numbered when it returns, not before it is sent (see numbered).
// retry reports an error of a connection that died before the call.
func (m *Master) run(ctx context.Context, cc rueidis.CommandClient, server string, dials *uint64, call driver.Call) (rep driver.Reply, retry bool, err error) {
	rep.Server = server
	var check *driver.Check
	if call.Check != nil {
		check = call.Check(server)
	}
	asked := check != nil
	if dials != nil {
		rep.Dials = *dials
		asked = check.Due(rep.Dials)
	}
	var questions [][]string
	if asked {
		questions = check.Commands()
	}
	argv := call.Argv(check, asked)
	v, answers, err := batch(ctx, cc, questions, evalsha(cc, call, argv))
	if isNoScript(err) {
		// The master lost its script cache: send the source instead, with
		// the questions again, so that their answers come from the
		// connection that runs the script.
		v, answers, err = batch(ctx, cc, questions, eval(cc, call, argv))
	}
	if dials == nil {
		rep.Dials = m.numbered()
	}
	rep.Answers = answers
	if err != nil && stale(err) && ctx.Err() == nil {
		return rep, true, err
	}
	if err != nil {
		return rep, false, err
	}
	rep.Value = v
	return rep, false, nil
}

// numbered returns the next number of a reply that came without dial
// counts, as its Reply.Dials: every call counts as a new connection, and the
// guard keeps the answers of the highest number it has seen, dropping any
// that come to it with a lower one. Numbering a reply as it returns, rather
// than as its call is sent, keeps the numbers in the order the answers came
// back in: a call sent before a master restarted, and answered by the old
// process, cannot be numbered above one answered by the new process unless
// it stalled between its reply and its number for the whole restart. (Even
// then only if the other call stalled too, between its number and the
// guard, so that the guard drops the newer answers; a client that cannot
// afford even that counts its dials: see WithDials.)
func (m *Master) numbered() uint64 { return m.calls.Add(1) }

func evalsha(client rueidis.CommandClient, call driver.Call, argv []string) rueidis.Completed {
	return client.B().Evalsha().Sha1(call.Script.SHA).Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(argv...).Build()
}

func eval(client rueidis.CommandClient, call driver.Call, argv []string) rueidis.Completed {
	return client.B().Eval().Script(call.Script.Src).Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(argv...).Build()
}

// batch sends the questions and then the script as one DoMulti, and returns
// the script's reply in the neutral form, the answers (nil without
// questions), and the script's error: a driver.Error for an error reply.
func batch(ctx context.Context, client rueidis.CommandClient, questions [][]string, script rueidis.Completed) (any, []any, error) {
	cmds := make(rueidis.Commands, 0, len(questions)+1)
	for _, q := range questions {
		cmds = append(cmds, client.B().Arbitrary(q...).Build())
	}
	cmds = append(cmds, script)
	res := client.DoMulti(ctx, cmds...)
	if len(res) != len(cmds) {
		return nil, nil, fmt.Errorf("rueidisdriver: %d replies to %d commands", len(res), len(cmds))
	}
	var answers []any
	if len(questions) > 0 {
		answers = make([]any, len(questions))
		for i := range questions {
			a, err := neutral(res[i])
			if err != nil {
				return nil, nil, err
			}
			answers[i] = a
		}
	}
	v, err := neutral(res[len(questions)])
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
// a master restart; a fresh connection may well succeed.
func stale(err error) bool {
	var de driver.Error
	if errors.As(err, &de) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}
