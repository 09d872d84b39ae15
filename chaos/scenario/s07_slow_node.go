package scenario

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/chaos/cluster"
)

// slowNode is scenario 7: replies come late, close to the node timeout:
// first from one master, then from a majority, so that a lock can only be
// had through slow replies.
func slowNode() *Scenario {
	s := &Scenario{
		ID: "07", Name: "slow-node",
		Shows:    "replies delayed 80±20ms (node timeout 100ms): from n0, then from n0-n2",
		Expected: "no lock granted with validity <= 0, C1 clean, C2 0% lost, C4 ok",
		Nodes:    5, Clients: 4, TTL: time.Second, Run: 4 * time.Second,
	}
	slow := cluster.Latency(80*time.Millisecond, 20*time.Millisecond)
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		for _, phase := range [][]int{{0}, {1, 2}} {
			for _, n := range phase {
				if err := e.Cluster.Impair(ctx, cluster.Link{Client: cluster.AllClients, Node: n}, slow); err != nil {
					return err
				}
			}
			if err := e.Sleep(ctx, 1500*time.Millisecond); err != nil {
				return err
			}
		}
		e.Mark("majority slow")
		return healAll(ctx, e)
	}
	s.Expect = func(r *Result) []string {
		var out []string
		for _, h := range r.Record.Holds {
			if h.Until <= h.Acquired {
				out = append(out, want(false, "client %d got a lock with validity %v at the moment it returned", h.Client, h.Until-h.Acquired)...)
				break
			}
		}
		return join(out, safe(r), noLoss(r))
	}
	return s
}
