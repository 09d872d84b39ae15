package redigo

import (
	"context"

	"github.com/quorumlock/quorumlock/driver"
)

var (
	_ driver.Master  = (*Redis)(nil)
	_ driver.Starter = (*Redis)(nil)
)

// Sharded reports false: a Redis is one standalone master, announcing with
// PUBLISH.
func (r *Redis) Sharded() bool { return false }

// Eval runs a script on the master: see driver.Master. The call shares a
// connection with every other call in flight (see package doc). A
// connection found dead is replaced, and the call sent again, within ctx;
// without a deadline in ctx the read timeout bounds the call.
func (r *Redis) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	return r.pl.Eval(ctx, call)
}

// Start runs call as Eval does and hands what Eval would return to done
// (see driver.Starter). When a connection is open and taking requests, the
// call is written from the caller's goroutine and its reply handed to done
// by the connection's reader, or at ctx's deadline, which alone bounds such
// a call; otherwise (a connection to open, a connection that dropped under
// the call, a script the master has not cached) a goroutine finishes the
// call as Eval would.
func (r *Redis) Start(ctx context.Context, call driver.Call, done driver.Done) {
	r.pl.Start(ctx, call, done)
}

// Do runs one command on the master and returns its reply in the neutral
// form of driver.Master's Eval: an integer as int64, a bulk or status string
// as string, an array as []any, a nil reply as nil. An error reply is
// returned as the error, a driver.Error. The command shares the connection
// with Eval's calls. It returns within ctx's deadline, or the read timeout
// when ctx has none. Unlike Eval it never sends a command twice.
func (r *Redis) Do(ctx context.Context, cmd string, args ...string) (any, error) {
	return r.pl.Do(ctx, append([]string{cmd}, args...)...)
}
