package scenario

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/chaos/workload"
)

// The two-group topology of the restart and clock-jump scenarios: five
// masters, four clients. Group A (clients 0 and 1) reaches n0, n1 and n2;
// group B (clients 2 and 3) reaches n0, n3 and n4. Each group sees a
// majority, and the two majorities share only n0, so mutual exclusion
// rests on n0 alone: exactly the master the scenario then restarts or
// whose clock it jumps.
func groupA() []int { return []int{0, 1} }
func groupB() []int { return []int{2, 3} }

func inGroup(g []int, client int) bool {
	for _, c := range g {
		if c == client {
			return true
		}
	}
	return false
}

// sharedNode sets the two-group topology up with rejecting links.
func sharedNode(ctx context.Context, e *Env) error {
	cut := map[int][]int{0: {3, 4}, 1: {3, 4}, 2: {1, 2}, 3: {1, 2}}
	for client, nodes := range cut {
		for _, n := range nodes {
			if err := e.Cluster.Impair(ctx, cluster.Link{Client: client, Node: n}, cluster.Impairment{Kind: cluster.Reject}); err != nil {
				return err
			}
		}
	}
	return nil
}

// catchA freezes a holder of group A that still has at least left of its
// validity.
func catchA(ctx context.Context, e *Env, left time.Duration) (*workload.Caught, error) {
	return e.Gate.Catch(ctx, func(h history.Hold) bool {
		return inGroup(groupA(), h.Client) && h.Until-e.History.Now() >= left
	})
}

// awaitHold waits until a client of group g holds a lock acquired after t.
func awaitHold(ctx context.Context, e *Env, g []int, after time.Duration) error {
	return e.History.Await(ctx, func(r *history.Record) bool {
		for _, h := range r.Holds {
			if h.Acquired > after && inGroup(g, h.Client) {
				return true
			}
		}
		return false
	})
}

// healAll heals every client's links to every master.
func healAll(ctx context.Context, e *Env) error {
	for n := range e.Cluster.Size() {
		if err := e.Cluster.Heal(ctx, cluster.Link{Client: cluster.AllClients, Node: n}); err != nil {
			return err
		}
	}
	return nil
}
