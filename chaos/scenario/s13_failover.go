package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// failovers are scenario 13 and its negative control: the failover of n0 to
// a replica that lags. n0 has a replica from the start. It is detached
// (promoted) while the workload runs, so it misses every grant after that;
// a holder of group A that got the lock after the detach is frozen while it
// holds it on n0, n1 and n2; then n0 fails over: every client's link to n0
// now leads to the replica, and the old master is killed, as a managed
// primary endpoint moves. Group B, which reaches n0, n3 and n4, then asks
// for the lock.
//
// The replica lacks the frozen holder's key, and has n0's fence counter
// from before its last grants. With the guard off it votes at once, and
// group B gets the lock while A's holder still has it: the negative control
// that shows C1 can fail. With the guard on (the default), the clients see
// another run_id at n0's address and a promoted replica, and keep it out of
// the quorum for the guard window: C1 stays clean. The replica, finding
// fence data it did not count, restarts its fences from its clock; when the
// frozen holder, kept frozen until group B has the lock, writes late, the
// fenced store refuses it, and C3 stays clean.
func failovers() []*Scenario {
	return []*Scenario{
		failover("13a", "failover-guard-off", false,
			"n0 fails over to a replica that lags (detached before the frozen holder's grant), guard off: the negative control",
			"C1 MUST find the double holder"),
		failover("13b", "failover-guard-on", true,
			"n0 fails over to a replica that lags (detached before the frozen holder's grant), guard on (the default)",
			"C1 and C3 clean: the promoted replica does not vote for the guard window, then rejoins with larger fences; the store refuses the frozen holder's late write"),
	}
}

func failover(id, name string, guard bool, shows, expected string) *Scenario {
	s := &Scenario{
		ID: id, Name: name, Shows: shows, Expected: expected,
		Nodes: 5, Clients: 4, TTL: 3 * time.Second, Run: 4 * time.Second,
		Guard: guard, WarmUp: guard, Replicas: []int{0},
		Setup: sharedNode,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		if err := e.Cluster.DetachReplica(ctx, 0); err != nil {
			return err
		}
		detached := e.Mark("replica detached")
		// The replica may hold keys set before it was detached whose
		// deletions never reached it; they run out within a TTL. The holder
		// frozen is one that got the lock half a TTL after the detach, so
		// that group B's way through the replica is free before the
		// holder's validity ends.
		c, err := e.Gate.Catch(ctx, func(h history.Hold) bool {
			return inGroup(groupA(), h.Client) && h.Acquired > detached+s.TTL/2 && h.Until-e.History.Now() >= 2*time.Second
		})
		if err != nil {
			return fmt.Errorf("no holder of group A to freeze: %w", err)
		}
		defer c.Resume()
		until := c.Hold.Until
		e.Notef("client %d frozen while it holds fence %d on n0, n1 and n2; n0's replica lacks it", c.Hold.Client, c.Hold.Fence)
		if err := e.Cluster.Failover(ctx, 0); err != nil {
			return err
		}
		moved := e.Mark("failover")
		if holder, err := tokenOn(ctx, e.Cluster.Direct(0), "chaos-"+s.ID); err == nil && holder == c.Hold.Token {
			e.Failf("the replica holds the frozen holder's token: it did not lag")
		}
		if guard {
			// The holder stays frozen, past its validity, until group B has
			// the lock through the promoted replica and has written: then
			// it writes late, with its old fence, which the store must
			// refuse. (Group B's failed attempts during the quarantine
			// count on n3 and n4 too, so here its fence would pass the
			// frozen holder's even from the replica's old counter; the
			// redlock package's failover tests are where old counters
			// alone decide.)
			rctx, cancel := context.WithTimeout(ctx, 2*s.TTL+5*time.Second)
			defer cancel()
			if err := awaitHold(rctx, e, groupB(), moved); err != nil {
				e.Failf("n0 never rejoined the quorum after the failover: group B got no lock (%v)", err)
				return nil
			}
			rejoined := e.Mark("rejoined")
			if rejoined < until {
				e.Notef("group B got the lock while client %d was frozen holding it", c.Hold.Client)
			}
			e.Sleep(ctx, 200*time.Millisecond)
			c.Resume()
			e.Mark("frozen holder resumed")
			return nil
		}
		// Does group B get the lock while the holder of group A is frozen?
		wctx, cancel := e.Deadline(ctx, until-300*time.Millisecond)
		err = awaitHold(wctx, e, groupB(), moved)
		cancel()
		if err == nil {
			e.Notef("group B got the lock while client %d was frozen holding it", c.Hold.Client)
			e.Sleep(ctx, min(400*time.Millisecond, until-300*time.Millisecond-e.History.Now()))
		} else {
			e.Notef("group B did not get the lock while client %d was frozen holding it", c.Hold.Client)
		}
		return nil
	}
	s.Expect = func(r *Result) []string {
		if !guard {
			return want(len(r.C1) > 0, "negative control: C1 found no double holder, so it cannot be shown to fail")
		}
		var late []string
		for _, h := range caught(r) {
			for _, w := range writesOf(r, h.ID) {
				late = append(late, want(!w.Accepted, "C3: the store accepted the frozen holder's late write with fence %d", w.Fence)...)
			}
		}
		return join(safe(r), late)
	}
	return s
}
