package scenario

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/chaos/cluster"
)

// The faults and the masters the primitives' scenarios (17, 18, 19) share.

// pauseThenRestart is their Inject: 800 ms in, n1 is SIGSTOPped for 1.5
// TTL and resumed ("paused", "unpausing"); half a second later n3 is
// SIGKILLed and started again at once, empty ("restarted").
func pauseThenRestart(ttl time.Duration) func(ctx context.Context, e *Env) error {
	return func(ctx context.Context, e *Env) error {
		steps := []func() error{
			func() error { return e.Sleep(ctx, 800*time.Millisecond) },
			func() error { return e.Cluster.Pause(ctx, 1) },
			func() error { e.Mark("paused"); return e.Sleep(ctx, ttl*3/2) },
			func() error { e.Mark("unpausing"); return e.Cluster.Unpause(ctx, 1) },
			func() error { return e.Sleep(ctx, 500*time.Millisecond) },
			func() error { return e.Cluster.Kill(ctx, 3) },
			func() error { return e.Cluster.Start(ctx, 3, cluster.Ephemeral) },
			func() error { e.Mark("restarted"); return nil },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	}
}

// twoSides gives 8 clients two sets of three of the five masters, {n0,n1,n2}
// and {n2,n3,n4}, in turn: a quorum of one set (two of its three) can miss
// the other's entirely, which is what the controls 18a and 19a need.
func twoSides() [][]int {
	sides := make([][]int, 8)
	for i := range sides {
		sides[i] = []int{0, 1, 2}
		if i%2 == 1 {
			sides[i] = []int{2, 3, 4}
		}
	}
	return sides
}
