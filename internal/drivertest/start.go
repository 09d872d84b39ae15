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

// ThroughStart returns m with its Eval made by m's Start (driver.Starter)
// and a wait for done, so that the contract's sequences check Start too.
// The test fails if done comes later than startSlack after the call's
// deadline, or more than once. m must implement driver.Starter.
func ThroughStart(t testing.TB, m driver.Master) driver.Master {
	s, ok := m.(driver.Starter)
	if !ok {
		t.Fatalf("drivertest: %T does not implement driver.Starter", m)
	}
	w := &throughStart{Master: m, s: s, t: t}
	t.Cleanup(func() {
		if st, fin := w.started.Load(), w.finished.Load(); st != fin {
			t.Errorf("drivertest: %d calls started, done called %d times", st, fin)
		}
	})
	return w
}

type throughStart struct {
	driver.Master
	s                 driver.Starter
	t                 testing.TB
	started, finished atomic.Int64
}

type startResult struct {
	rep driver.Reply
	err error
}

func (w *throughStart) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		// Start needs a deadline; the contract's calls have one.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
		dl, _ = ctx.Deadline()
	}
	got := make(chan startResult, 2) // room for a second done, which the cleanup reports
	w.started.Add(1)
	w.s.Start(ctx, call, driver.DoneFunc(func(rep driver.Reply, err error) {
		w.finished.Add(1)
		got <- startResult{rep, err}
	}))
	select {
	case r := <-got:
		return r.rep, r.err
	case <-time.After(time.Until(dl) + startSlack):
		w.t.Errorf("drivertest: Start's done not called by %v after the call's deadline", startSlack)
		return driver.Reply{}, errors.New("drivertest: no reply from Start")
	}
}
