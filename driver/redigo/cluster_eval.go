package redigo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo/internal/pipeline"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// Eval runs a script on the master that owns its keys' hash slot, and
// waits for its outcome. Keys of different slots get a CROSSSLOT error without a
// round trip. A MOVED reply makes the driver read the slot map again and try
// once more on the master the reply names; an ASK reply, once on the node it
// names, with ASKING ahead of the script. call.Check is called with the
// address of each server the script is sent to, and Reply.Server is the
// address of the last. A connection error makes the next call read the slot
// map first, so that a master's failover is followed. The answers count
// as taken when Eval returns (see pipeline.Answered).
func (c *Cluster) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	rep, err, a := c.run(ctx, call)
	a.Taken()
	return rep, err
}

// returnRun runs call as Eval does and hands the outcome to done, then
// marks the connection that answered the questions as checked.
func (c *Cluster) returnRun(ctx context.Context, call driver.Call, done driver.Done) {
	rep, err, a := c.run(ctx, call)
	done.Returned(rep, err)
	a.Taken()
}

// run is Eval, with the connection that answered the questions, for the
// caller to mark once it has handed the reply on.
func (c *Cluster) run(ctx context.Context, call driver.Call) (driver.Reply, error, pipeline.Answered) {
	if len(call.Keys) == 0 {
		return driver.Reply{}, errors.New("redigo: cluster: a script without keys has no hash slot to route by"), pipeline.Answered{}
	}
	s := slot.Of(call.Keys[0])
	for _, k := range call.Keys[1:] {
		if slot.Of(k) != s {
			return driver.Reply{}, driver.Error("CROSSSLOT Keys in request don't hash to the same slot (redigo: " +
				fmt.Sprintf("%q and %q)", call.Keys[0], k)), pipeline.Answered{}
		}
	}
	m, err := c.current(ctx)
	if err != nil {
		return driver.Reply{}, err, pipeline.Answered{}
	}
	addr, err := m.ownerOf(call.Keys[0])
	if err != nil {
		return driver.Reply{}, err, pipeline.Answered{}
	}
	rep, err, a := c.evalAt(ctx, addr, call, false)
	return c.redirected(ctx, m, call, rep, err, a)
}

// redirected finishes a call whose try on the slot's master, as map m
// names it, gave rep and err, its questions answered on a: it follows a
// MOVED or an ASK once, and marks the map stale after a connection error.
func (c *Cluster) redirected(ctx context.Context, m *slotMap, call driver.Call, rep driver.Reply, err error, a pipeline.Answered) (driver.Reply, error, pipeline.Answered) {
	var de driver.Error
	if !errors.As(err, &de) {
		c.failed(ctx, err)
		return rep, err, a
	}
	code, target := redirect(de)
	if target == "" {
		return rep, err, a
	}
	// The redirected reply's answers are dropped: their connection stays
	// fresh, and asks again on its next call.
	asking := false
	if code == "MOVED" {
		// The slot has a new owner: learn the rest of the map too. The
		// reply's owner is the one to try whatever the read says.
		_ = c.refresh(ctx, m)
	} else {
		asking = true
	}
	rep, err, a = c.evalAt(ctx, target, call, asking)
	if !errors.As(err, &de) {
		c.failed(ctx, err)
	}
	return rep, err, a
}

// failed notes a call's error other than a master's reply: the master may
// be gone, so the slot map is read again before the next call.
func (c *Cluster) failed(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil && !errors.Is(err, errClusterClosed) {
		c.stale.Store(true)
	}
}

// Start runs a script on the master of its keys' slot, as Eval does, and
// hands the outcome to done (see driver.Master). When the slot map is current and names the master
// of the call's slot, the call is started on that master's driver (see
// Redis.Start); otherwise, or when the master redirects it (MOVED, ASK: the
// script did not run), a goroutine runs it as Eval does.
func (c *Cluster) Start(ctx context.Context, call driver.Call, done driver.Done) {
	m, addr, ok := c.routed(call)
	if !ok {
		go c.returnRun(ctx, call, done)
		return
	}
	n, err := c.node(addr)
	if err != nil {
		done.Returned(driver.Reply{Server: addr}, err)
		return
	}
	at := call
	if call.Check != nil {
		at.Check = func(string) *driver.Check { return call.Check(addr) }
	}
	n.Start(ctx, at, &routed{c: c, ctx: ctx, m: m, call: call, addr: addr, done: done})
}

// routed is a call started on the master of its slot: it hands the reply
// on, or follows a redirection (MOVED, ASK: the script did not run) in a
// goroutine, as Eval does.
type routed struct {
	c    *Cluster
	ctx  context.Context
	m    *slotMap
	call driver.Call
	addr string
	done driver.Done
}

func (r *routed) Returned(rep driver.Reply, err error) { r.ReturnedOn(rep, err, pipeline.Answered{}) }

// ReturnedOn hands the reply on, and a's connection counts as checked once
// it has; a redirected call's answers are dropped with its reply, and
// their connection stays fresh.
func (r *routed) ReturnedOn(rep driver.Reply, err error, a pipeline.Answered) {
	rep.Server = r.addr
	var de driver.Error
	if errors.As(err, &de) {
		if _, target := redirect(de); target != "" {
			go func() {
				rep, err, a := r.c.redirected(r.ctx, r.m, r.call, rep, err, pipeline.Answered{})
				r.done.Returned(rep, err)
				a.Taken()
			}()
			return
		}
	}
	r.c.failed(r.ctx, err)
	r.done.Returned(rep, err)
	a.Taken()
}

// routed returns the slot map and the master of call's hash slot when the
// map is current and names one, and every key of call is in that slot.
func (c *Cluster) routed(call driver.Call) (*slotMap, string, bool) {
	m := c.slots.Load()
	if len(call.Keys) == 0 || m == nil || c.stale.Load() {
		return nil, "", false
	}
	s := slot.Of(call.Keys[0])
	for _, k := range call.Keys[1:] {
		if slot.Of(k) != s {
			return nil, "", false
		}
	}
	addr, err := m.ownerOf(call.Keys[0])
	return m, addr, err == nil
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
func (c *Cluster) evalAt(ctx context.Context, addr string, call driver.Call, asking bool) (driver.Reply, error, pipeline.Answered) {
	n, err := c.node(addr)
	if err != nil {
		return driver.Reply{Server: addr}, err, pipeline.Answered{}
	}
	at := call
	if call.Check != nil {
		at.Check = func(string) *driver.Check { return call.Check(addr) }
	}
	rep, err, a := n.pl.Run(ctx, at, asking)
	rep.Server = addr
	return rep, err, a
}
