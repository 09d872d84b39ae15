package redigo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/driver"
)

var _ driver.Master = (*Redis)(nil)

// Sharded reports false: a Redis is one standalone master, announcing with
// PUBLISH.
func (r *Redis) Sharded() bool { return false }

// Eval runs a script on the master: see driver.Master. In the pipelined
// mode (WithPipeline) the call shares a connection with every other call in
// flight; in the pooled mode it has a pooled connection to itself. A
// connection found dead is replaced, up to twice, within ctx; without a
// deadline in ctx the read timeout bounds the call (each try, when pooled).
func (r *Redis) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	if r.pl != nil {
		return r.evalPipelined(ctx, call)
	}
	var (
		rep   driver.Reply
		err   error
		retry bool
	)
	for try := 0; try < 3; try++ {
		rep, retry, err = r.evalOnce(ctx, call)
		rep.Lost = try > 0 || retry
		if !retry {
			break
		}
	}
	return rep, err
}

func (r *Redis) evalOnce(ctx context.Context, call driver.Call) (rep driver.Reply, retry bool, err error) {
	timeout := r.readTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return rep, false, context.DeadlineExceeded
		}
	}
	conn, err := r.pool.GetContext(ctx)
	if err != nil {
		return rep, false, err
	}
	defer conn.Close()
	rep.Dials = r.dials.Load()
	var check *driver.Check
	if call.Check != nil {
		check = call.Check("")
	}
	asked := check.Due(rep.Dials)
	args := evalArgs(call, check, asked)
	var v any
	if asked {
		v, rep.Answers, err = checked(conn, timeout, check.Commands(), args)
	} else {
		v, err = redis.DoWithTimeout(conn, timeout, "EVALSHA", args...)
	}
	if isNoScript(err) {
		// The master lost its script cache: send the source instead.
		args[0] = call.Script.Src
		v, err = redis.DoWithTimeout(conn, timeout, "EVAL", args...)
	}
	if err != nil && stale(err) && ctx.Err() == nil {
		return rep, true, err
	}
	if err != nil {
		return rep, false, serverError(unauthenticated(err))
	}
	rep.Value = neutral(v)
	return rep, false, nil
}

// evalArgs returns EVALSHA's arguments: digest, key count, keys, arguments.
func evalArgs(call driver.Call, check *driver.Check, asked bool) []any {
	argv := call.Argv(check, asked)
	out := make([]any, 0, 2+len(call.Keys)+len(argv))
	out = append(out, call.Script.SHA, len(call.Keys))
	for _, k := range call.Keys {
		out = append(out, k)
	}
	for _, a := range argv {
		out = append(out, a)
	}
	return out
}

// checked sends the check's questions ahead of the script, in one round trip
// on one connection, and returns the script's reply and the answers.
func checked(conn redis.Conn, timeout time.Duration, questions [][]string, args []any) (any, []any, error) {
	for _, q := range questions {
		qa := make([]any, len(q)-1)
		for i, a := range q[1:] {
			qa[i] = a
		}
		conn.Send(q[0], qa...)
	}
	conn.Send("EVALSHA", args...)
	all, err := redis.Values(redis.DoWithTimeout(conn, timeout, ""))
	if err != nil {
		return nil, nil, err
	}
	if len(all) != len(questions)+1 {
		return nil, nil, fmt.Errorf("pipeline: %d replies, want %d", len(all), len(questions)+1)
	}
	answers := make([]any, len(questions))
	for i := range questions {
		answers[i] = neutral(all[i])
	}
	if e, ok := all[len(questions)].(redis.Error); ok {
		return nil, answers, e
	}
	return all[len(questions)], answers, nil
}

// neutral turns a redigo reply into the driver's neutral form.
func neutral(v any) any {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = neutral(x)
		}
		return out
	case redis.Error:
		return driver.Error(v)
	}
	return v // int64, string (a status reply), nil
}

// serverError turns redigo's error reply into the driver's.
func serverError(err error) error {
	if re, ok := err.(redis.Error); ok {
		return driver.Error(re)
	}
	return err
}

// unauthenticated turns the protocol error with which Redis answers a
// pipeline on a connection that has not authenticated into the NOAUTH it
// stands for: the master requires a password and none was given.
func unauthenticated(err error) error {
	var re redis.Error
	var de driver.Error
	if errors.As(err, &re) && strings.Contains(string(re), "unauthenticated") ||
		errors.As(err, &de) && strings.Contains(string(de), "unauthenticated") {
		return driver.Error("NOAUTH Authentication required (the master requires a password: give it in the address, redis://user:password@host:port)")
	}
	return err
}

func isNoScript(err error) bool {
	re, ok := err.(redis.Error) // redigo returns server errors unwrapped
	return ok && strings.HasPrefix(string(re), "NOSCRIPT")
}

// stale reports errors of a connection that died while it sat in the pool,
// as after a master restart; a fresh connection may well succeed.
func stale(err error) bool {
	var re redis.Error
	if errors.As(err, &re) {
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
