package scenario

import "time"

// noFaults is scenario 1: the baseline. Eight clients contend for one key
// on five healthy masters.
func noFaults() *Scenario {
	return &Scenario{
		ID: "01", Name: "no-faults",
		Shows:    "8 clients contend for one key on 5 healthy masters",
		Expected: "C1 clean, C2 0% lost, no fenced write rejected, C4 ok",
		Nodes:    5, Clients: 8, TTL: 2 * time.Second, Run: 3 * time.Second,
		Expect: func(r *Result) []string {
			return join(safe(r), noLoss(r),
				want(r.C3.Rejected == 0, "C3: %d fenced writes rejected without any fault: fences went backwards", r.C3.Rejected),
				want(r.Locks >= 20, "only %d locks granted in %v without faults", r.Locks, r.Scenario.Run))
		},
	}
}
