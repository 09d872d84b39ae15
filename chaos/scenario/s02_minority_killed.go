package scenario

import (
	"context"
	"math"
	"time"
)

// minorityKilled is scenario 2: two of five masters are killed mid-run and
// stay down.
func minorityKilled() *Scenario {
	return &Scenario{
		ID: "02", Name: "minority-killed",
		Shows:    "2 of 5 masters SIGKILLed mid-run and left down",
		Expected: "locks keep being granted, C1 clean, C2 0% lost, C4 ok",
		Nodes:    5, Clients: 6, TTL: time.Second, Run: 4 * time.Second,
		Inject: func(ctx context.Context, e *Env) error {
			if err := e.Sleep(ctx, 1200*time.Millisecond); err != nil {
				return err
			}
			for _, n := range []int{3, 4} {
				if err := e.Cluster.Kill(ctx, n); err != nil {
					return err
				}
			}
			e.Mark("killed")
			return nil
		},
		Expect: func(r *Result) []string {
			m, bad := marks(r, "killed")
			if bad != nil {
				return bad
			}
			after := locksBetween(r, m[0], math.MaxInt64)
			return join(safe(r), noLoss(r),
				want(after >= 5, "only %d locks granted after the minority was killed", after))
		},
	}
}
