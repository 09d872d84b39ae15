package drivertest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// startSlack is how long after a call's deadline Start may call done.
const startSlack = 2 * time.Second

// eval runs call on m through Start, the one way the lock calls a master,
// and waits for done. The test fails if done comes later than startSlack
// after the call's deadline, or more than once.
func eval(t testing.TB, m driver.Master, ctx context.Context, call driver.Call) (driver.Reply, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		// Start needs a deadline; the contract's calls have one.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
		dl, _ = ctx.Deadline()
	}
	d := &onceDone{t: t, got: make(chan startResult, 1)}
	m.Start(ctx, call, d)
	select {
	case r := <-d.got:
		return r.rep, r.err
	case <-time.After(time.Until(dl) + startSlack):
		t.Errorf("drivertest: Start's done not called by %v after the call's deadline", startSlack)
		return driver.Reply{}, errors.New("drivertest: no reply from Start")
	}
}

type startResult struct {
	rep driver.Reply
	err error
}

// onceDone is a Done that fails the test when called twice.
type onceDone struct {
	t     testing.TB
	calls atomic.Int32
	got   chan startResult
}

func (d *onceDone) Returned(rep driver.Reply, err error) {
	if d.calls.Add(1) > 1 {
		d.t.Errorf("drivertest: Start called done more than once")
		return
	}
	d.got <- startResult{rep, err}
}
