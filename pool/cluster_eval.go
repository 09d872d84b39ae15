package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// Eval runs a script on the master that owns its keys' hash slot: see
// driver.Master. Keys of different slots get a CROSSSLOT error without a
// round trip. A MOVED reply makes the driver read the slot map again and try
// once more on the master the reply names; an ASK reply, once on the node it
// names, with ASKING ahead of the script. call.Check is called with the
// address of each server the script is sent to, and Reply.Server is the
// address of the last. A connection error makes the next call read the slot
// map first, so that a master's failover is followed.
func (c *Cluster) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	if len(call.Keys) == 0 {
		return driver.Reply{}, errors.New("pool: cluster: a script without keys has no hash slot to route by")
	}
	s := slot.Of(call.Keys[0])
	for _, k := range call.Keys[1:] {
		if slot.Of(k) != s {
			return driver.Reply{}, driver.Error("CROSSSLOT Keys in request don't hash to the same slot (pool: " +
				fmt.Sprintf("%q and %q)", call.Keys[0], k))
		}
	}
	m, err := c.current(ctx)
	if err != nil {
		return driver.Reply{}, err
	}
	addr, err := m.ownerOf(call.Keys[0])
	if err != nil {
		return driver.Reply{}, err
	}
	asking := false
	for hop := 0; ; hop++ {
		rep, err := c.evalAt(ctx, addr, call, asking)
		var de driver.Error
		if !errors.As(err, &de) {
			if err != nil && ctx.Err() == nil && !errors.Is(err, errClusterClosed) {
				// The master may be gone; read the map before the next call.
				c.stale.Store(true)
			}
			return rep, err
		}
		code, target := redirect(de)
		if hop > 0 || target == "" {
			return rep, err
		}
		switch code {
		case "MOVED":
			// The slot has a new owner: learn the rest of the map too.
			// The reply's owner is the one to try whatever the read says.
			_ = c.refresh(ctx, m)
			addr, asking = target, false
		case "ASK":
			addr, asking = target, true
		}
	}
}

// redirect returns the code and node of a MOVED or ASK reply, as in
// "MOVED 3999 127.0.0.1:6381", or "" for another error.
func redirect(e driver.Error) (code, addr string) {
	f := strings.Fields(string(e))
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return "", ""
	}
	return f[0], f[2]
}

// evalAt runs the call on the node at addr, with ASKING ahead of it if
// asking.
func (c *Cluster) evalAt(ctx context.Context, addr string, call driver.Call, asking bool) (driver.Reply, error) {
	n, err := c.node(addr)
	if err != nil {
		return driver.Reply{Server: addr}, err
	}
	var rep driver.Reply
	if asking {
		rep, err = evalAsking(ctx, n, addr, call)
	} else {
		at := call
		if call.Check != nil {
			at.Check = func(string) *driver.Check { return call.Check(addr) }
		}
		rep, err = n.Eval(ctx, at)
	}
	rep.Server = addr
	return rep, err
}

// evalAsking runs the call on a node importing the call's slot: the check's
// questions, then ASKING, then the script by its source, as the node may not
// have it cached and ASKING holds for one command only. A migration is short
// and rare, so a connection that turns out dead is not replaced here.
func evalAsking(ctx context.Context, n *Redis, addr string, call driver.Call) (driver.Reply, error) {
	rep := driver.Reply{Server: addr}
	timeout := n.readTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return rep, context.DeadlineExceeded
		}
	}
	conn, err := n.pool.GetContext(ctx)
	if err != nil {
		return rep, err
	}
	defer conn.Close()
	rep.Dials = n.dials.Load()
	var check *driver.Check
	if call.Check != nil {
		check = call.Check(addr)
	}
	asked := check.Due(rep.Dials)
	args := evalArgs(call, check, asked)
	args[0] = call.Script.Src
	var questions [][]string
	if asked {
		questions = check.Commands()
	}
	for _, q := range questions {
		qa := make([]any, len(q)-1)
		for i, a := range q[1:] {
			qa[i] = a
		}
		conn.Send(q[0], qa...)
	}
	conn.Send("ASKING")
	conn.Send("EVAL", args...)
	all, err := redis.Values(redis.DoWithTimeout(conn, timeout, ""))
	if err != nil {
		return rep, serverError(err)
	}
	if len(all) != len(questions)+2 {
		return rep, fmt.Errorf("pipeline: %d replies, want %d", len(all), len(questions)+2)
	}
	if asked {
		rep.Answers = make([]any, len(questions))
		for i := range questions {
			rep.Answers[i] = neutral(all[i])
		}
	}
	if e, ok := all[len(questions)].(redis.Error); ok {
		return rep, driver.Error(e)
	}
	v := all[len(questions)+1]
	if e, ok := v.(redis.Error); ok {
		return rep, driver.Error(e)
	}
	rep.Value = neutral(v)
	return rep, nil
}
