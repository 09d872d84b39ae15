package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// clientPause is scenario 10: a holder stalls in its critical section for
// longer than its TTL, after it checked its validity and before it writes,
// as a process paused by GC or SIGSTOP would. Another client takes the lock
// meanwhile.
func clientPause() *Scenario {
	s := &Scenario{
		ID: "10", Name: "client-pause",
		Shows:    "a holder frozen past its TTL between its validity check and its write",
		Expected: "its extension or release reports the loss; C3 rejects its late write; C1 clean",
		Nodes:    5, Clients: 4, TTL: time.Second, Run: 3 * time.Second,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		c, err := e.Gate.Catch(ctx, func(h history.Hold) bool { return h.Until-e.History.Now() >= s.TTL/2 })
		if err != nil {
			return fmt.Errorf("no holder to freeze: %w", err)
		}
		defer c.Resume()
		e.Notef("client %d frozen holding fence %d", c.Hold.Client, c.Hold.Fence)
		// Its lock expires; wait until another client took it and wrote.
		wctx, cancel := context.WithTimeout(ctx, 3*s.TTL+2*time.Second)
		err = e.History.Await(wctx, func(r *history.Record) bool {
			for _, w := range r.Writes {
				if w.Accepted && w.Fence > c.Hold.Fence && w.At > c.Hold.Until {
					return true
				}
			}
			return false
		})
		cancel()
		if err != nil {
			e.Failf("no other client wrote after client %d's lock expired: %v", c.Hold.Client, err)
		}
		c.Resume()
		if err := awaitDone(ctx, e, c.Hold.ID); err != nil {
			return err
		}
		noteAfterPause(e, c.Hold.ID)
		return nil
	}
	s.Expect = func(r *Result) []string {
		cs := caught(r)
		out := join(safe(r), want(len(cs) == 1, "%d holders were frozen, want 1", len(cs)))
		for _, h := range cs {
			out = append(out, want(lostReported(h), "the frozen holder was not told: extend %v, release %v", h.ExtendErr, h.ReleaseErr)...)
			for _, w := range writesOf(r, h.ID) {
				out = append(out, want(!w.Accepted, "C3: the frozen holder's late write (fence %d) was accepted", w.Fence)...)
			}
		}
		return out
	}
	return s
}
