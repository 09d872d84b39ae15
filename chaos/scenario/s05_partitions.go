package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/chaos/cluster"
)

// partitions is scenario 5: every client is cut from a different minority
// of the masters, so each sees its own majority; halfway the cuts move to
// other minorities. Five clients, so that across both phases the ten
// minorities of two out of five masters are each cut once.
func partitions() *Scenario {
	s := &Scenario{
		ID: "05", Name: "partitions",
		Shows:    "each client blackholed from its own 2 of 5 masters, the cuts moved halfway",
		Expected: "locks keep being granted, C1 clean, C2 0% lost, C4 ok",
		Nodes:    5, Clients: 5, TTL: time.Second, Run: 5500 * time.Millisecond,
	}
	// In phase p, client c is cut from n(c) and n(c+1+p): {c, c+1}, then {c, c+2}.
	cut := func(ctx context.Context, e *Env, phase int) error {
		for c := range s.Clients {
			for _, n := range []int{c % s.Nodes, (c + 1 + phase) % s.Nodes} {
				if err := e.Cluster.Impair(ctx, cluster.Link{Client: c, Node: n}, cluster.Impairment{Kind: cluster.Blackhole}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 300*time.Millisecond); err != nil {
			return err
		}
		for phase := range 2 {
			if err := cut(ctx, e, phase); err != nil {
				return err
			}
			e.Mark(fmt.Sprintf("phase %d", phase+1))
			if err := e.Sleep(ctx, 2500*time.Millisecond); err != nil {
				return err
			}
			if err := healAll(ctx, e); err != nil {
				return err
			}
			e.Mark(fmt.Sprintf("phase %d healed", phase+1))
		}
		return nil
	}
	s.Expect = func(r *Result) []string {
		m, bad := marks(r, "phase 1", "phase 1 healed", "phase 2", "phase 2 healed")
		if bad != nil {
			return bad
		}
		p1, p2 := locksBetween(r, m[0], m[1]), locksBetween(r, m[2], m[3])
		return join(safe(r), noLoss(r),
			want(p1 >= 3 && p2 >= 3, "too few locks granted under partitions: %d, then %d", p1, p2))
	}
	return s
}
