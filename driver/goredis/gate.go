package goredis

import (
	"context"
	"errors"

	"github.com/quorumlock/quorumlock/driver"
)

// gated runs eval through the server's gate (driver.Gate): while the server
// answers nothing, one call at a time goes to the client, which would
// otherwise open a connection for each call in place of the last one's,
// and the others fail at once with driver.ErrSilent.
//
// caller is the caller's ctx and ctx the one go-redis gets (see within),
// whose deadline comes grace later: the gate hears of a call timing out by
// the caller's deadline, when the caller stops waiting, and of its outcome
// when go-redis returns. A late reply, after the caller left, still tells
// the gate that the server answers.
func (t *target) gated(caller, ctx context.Context, call driver.Call, cluster bool) (driver.Reply, error) {
	pass, err := t.gate.Enter(caller)
	if err != nil {
		return driver.Reply{Server: t.server}, err
	}
	stop := context.AfterFunc(caller, func() {
		if errors.Is(caller.Err(), context.DeadlineExceeded) {
			t.gate.TimedOut(pass)
		}
	})
	rep, err := t.eval(ctx, call, cluster)
	stop()
	var de driver.Error
	t.gate.Left(pass, err == nil || errors.As(err, &de) || errors.Is(err, ErrRedirected), err)
	return rep, err
}
