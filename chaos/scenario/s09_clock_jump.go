package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// clockJump is scenario 9: n0's clock jumps forward past the TTL while a
// holder of group A holds the lock there, so n0 frees the key early and
// group B takes the lock: the weakness Redlock is known for. The fenced
// store must reject the old holder's late write.
func clockJump() *Scenario {
	s := &Scenario{
		ID: "09", Name: "clock-jump",
		Shows:    "n0's clock jumps TTL+1s forward while group A holds the lock there",
		Expected: "C1 may be violated (the known weakness); C3 rejects the old holder's late write, no stale write accepted",
		Nodes:    5, Clients: 4, TTL: 3 * time.Second, Run: 4 * time.Second,
		Setup: sharedNode,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		c, err := catchA(ctx, e, 2*time.Second)
		if err != nil {
			return fmt.Errorf("no holder of group A to freeze: %w", err)
		}
		defer c.Resume()
		e.Notef("client %d frozen while it holds fence %d on n0, n1 and n2", c.Hold.Client, c.Hold.Fence)
		moved, err := e.Cluster.JumpClock(ctx, 0, s.TTL+time.Second)
		if err != nil {
			return err
		}
		jumped := e.Mark("jumped")
		e.Notef("n0's clock jumped %v: %d keys' expiry moved", s.TTL+time.Second, moved)
		// Wait until group B has taken the lock and written with a higher
		// fence; only then does the old holder wake up and write.
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = e.History.Await(wctx, func(r *history.Record) bool {
			for _, w := range r.Writes {
				if w.Accepted && w.Fence > c.Hold.Fence && inGroup(groupB(), w.Client) && w.At > jumped {
					return true
				}
			}
			return false
		})
		cancel()
		if err != nil {
			e.Notef("group B did not write while client %d was frozen", c.Hold.Client)
		} else {
			e.Notef("group B took the lock from n0, n3 and n4 and wrote with a higher fence")
			e.Sleep(ctx, 300*time.Millisecond) // so that the overlap shows on the timeline
		}
		c.Resume()
		if err := awaitDone(ctx, e, c.Hold.ID); err != nil {
			return err
		}
		noteAfterPause(e, c.Hold.ID)
		return nil
	}
	s.Expect = func(r *Result) []string {
		out := join(fenced(r), recovered(r), want(r.C3.Rejected >= 1, "C3: the fenced store rejected no write"))
		for _, h := range caught(r) {
			for _, w := range writesOf(r, h.ID) {
				out = append(out, want(!w.Accepted, "C3: the frozen holder's late write (fence %d) was accepted", w.Fence)...)
			}
		}
		return out
	}
	return s
}

// noteAfterPause notes what a resumed holder learnt: its late write, its
// extension and its release.
func noteAfterPause(e *Env, hold int) {
	r := e.History.Snapshot()
	if hold < 0 || hold >= len(r.Holds) {
		return
	}
	h := r.Holds[hold]
	write := "no fenced write"
	for _, w := range r.Writes {
		if w.Hold == hold {
			write = fmt.Sprintf("fenced write with fence %d accepted: %v", w.Fence, w.Accepted)
		}
	}
	e.Notef("client %d resumed: %s; Extend: %v; Release: %v", h.Client, write, h.ExtendErr, h.ReleaseErr)
}

// awaitDone waits until the given hold's release has returned.
func awaitDone(ctx context.Context, e *Env, hold int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return e.History.Await(ctx, func(r *history.Record) bool { return hold < len(r.Holds) && r.Holds[hold].Done })
}
