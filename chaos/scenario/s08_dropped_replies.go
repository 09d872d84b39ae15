package scenario

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/chaos/cluster"
)

// droppedReplies is scenario 8: masters run the acquire script but their
// replies never arrive. With a majority dropping replies every attempt
// fails, and each must roll its token back from every master, including
// those that ran the script without being heard.
func droppedReplies() *Scenario {
	s := &Scenario{
		ID: "08", Name: "dropped-replies",
		Shows:    "replies of n0-n2 dropped after the command ran, then of n0 alone",
		Expected: "no lock while a majority is unheard, and no failed token left on any master right after the attempts (C4)",
		Nodes:    5, Clients: 4, TTL: 4 * time.Second, Run: 3500 * time.Millisecond,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		for _, n := range []int{0, 1, 2} {
			if err := e.Cluster.Impair(ctx, cluster.Link{Client: cluster.AllClients, Node: n}, cluster.Impairment{Kind: cluster.DropReplies}); err != nil {
				return err
			}
		}
		e.Mark("dropping")
		if err := e.Sleep(ctx, 1200*time.Millisecond); err != nil {
			return err
		}
		// Quiesce the clients, give the last roll-backs their node timeout,
		// and look at the masters long before the TTL could hide anything.
		if err := e.Workload.HoldOff(ctx); err != nil {
			return err
		}
		e.Mark("held off")
		if err := e.Sleep(ctx, 2*s.nodeTimeout()+300*time.Millisecond); err != nil {
			return err
		}
		residue, errs := e.Scan(ctx)
		e.Notef("right after the failed attempts: %d lock keys, %d with a failed token, %d unreadable masters", residue.Keys, len(residue.Failed), len(errs))
		if !residue.OK() || len(errs) > 0 {
			e.Failf("C4: %d keys still hold a failed attempt's token %v after the attempts returned (scan errors: %v)", len(residue.Failed), s.TTL, errs)
		}
		if err := healAll(ctx, e); err != nil {
			return err
		}
		e.Workload.Resume()
		// A minority dropping replies: locks are granted, and their release
		// clears the unheard master too.
		if err := e.Cluster.Impair(ctx, cluster.Link{Client: cluster.AllClients, Node: 0}, cluster.Impairment{Kind: cluster.DropReplies}); err != nil {
			return err
		}
		if err := e.Sleep(ctx, time.Second); err != nil {
			return err
		}
		return healAll(ctx, e)
	}
	s.Expect = func(r *Result) []string {
		m, bad := marks(r, "dropping", "held off")
		if bad != nil {
			return bad
		}
		during := attemptsWithin(r, m[0], m[1])
		ok := 0
		for _, a := range during {
			if a.OK {
				ok++
			}
		}
		return join(safe(r), noLoss(r),
			want(len(during) >= 5, "only %d attempts while a majority's replies were dropped", len(during)),
			want(ok == 0, "%d attempts got the lock while a majority's replies were dropped", ok))
	}
	return s
}
