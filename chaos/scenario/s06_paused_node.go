package scenario

import (
	"context"
	"time"
)

// pausedNode is scenario 6: one master is SIGSTOPped for longer than the
// TTL, then resumed. It keeps its sockets open and answers nothing.
func pausedNode() *Scenario {
	s := &Scenario{
		ID: "06", Name: "paused-node",
		Shows:    "n2 SIGSTOPped for 1.5x the TTL, then SIGCONT",
		Expected: "every attempt bounded by the node timeout, C1 clean, C2 0% lost, C4 ok after unpause",
		Nodes:    5, Clients: 6, TTL: time.Second, Run: 3500 * time.Millisecond,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 800*time.Millisecond); err != nil {
			return err
		}
		if err := e.Cluster.Pause(ctx, 2); err != nil {
			return err
		}
		e.Mark("paused")
		if err := e.Sleep(ctx, s.TTL*3/2); err != nil {
			return err
		}
		e.Mark("unpausing")
		return e.Cluster.Unpause(ctx, 2)
	}
	s.Expect = func(r *Result) []string {
		m, bad := marks(r, "paused", "unpausing")
		if bad != nil {
			return bad
		}
		during := attemptsWithin(r, m[0], m[1])
		// A failed attempt waits one node timeout for the fan-out and one
		// for the roll-back; the rest is slack for a loaded machine. The
		// pause itself is far longer.
		bound := 2*s.nodeTimeout() + 500*time.Millisecond
		return join(safe(r), noLoss(r),
			want(len(during) >= 10, "only %d attempts while n2 was paused", len(during)),
			want(locksBetween(r, m[0], m[1]) >= 3, "only %d locks granted while n2 was paused", locksBetween(r, m[0], m[1])),
			want(maxLatency(during) <= bound, "an attempt took %v while n2 was paused, more than %v", maxLatency(during), bound))
	}
	return s
}
