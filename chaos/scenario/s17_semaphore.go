package scenario

import (
	"time"

	"github.com/quorumlock/quorumlock/chaos/workload"
	"github.com/quorumlock/quorumlock/redlock"
)

// semaphores are scenario 17 and its control. Eight clients loop taking
// one of two permits of a key on five masters, where a permit needs four
// of them.
//
// 17: one master is SIGSTOPped for longer than the TTL and resumed, and
// another is SIGKILLed and restarted at once, empty, with the restart
// guard on: at most two holders throughout, and permits keep being granted
// with one master down.
//
// 17a, the negative control: the clients are given disagreeing sets of
// three of the five masters, so that each one's quorum of all three is a
// majority of the five. Three holders fit, A on {n0,n1,n2}, B on
// {n2,n3,n4} and C on {n0,n1,n3}, while no master admits more than two:
// C6 must find them.
func semaphores() []*Scenario {
	const permits = 2
	on := &Scenario{
		ID: "17", Name: "semaphore",
		Shows:    "8 clients, 2 permits, 5 masters (4 per permit): n1 SIGSTOPped 1.5 TTL, then n3 SIGKILLed and restarted empty, guard on",
		Expected: "C6 clean (never 3 holders), permits granted while a master is down, C4 ok",
		Nodes:    5, Clients: 8, TTL: time.Second, Run: 5 * time.Second,
		Guard: true, WarmUp: true,
		Mode: workload.LockMode, Wait: 3 * time.Second, Permits: permits,
	}
	on.Inject = pauseThenRestart(on.TTL)
	on.Expect = func(r *Result) []string {
		m, bad := marks(r, "paused", "unpausing", "restarted")
		if bad != nil {
			return bad
		}
		paused := locksBetween(r, m[0], m[1])
		return join(bounded(r), recovered(r),
			want(paused >= 5, "only %d permits granted while n1 was paused", paused),
			want(r.Locks >= 50, "only %d permits granted in the run", r.Locks))
	}

	control := &Scenario{
		ID: "17a", Name: "semaphore-disagreeing-masters",
		Shows:    "8 clients, 2 permits, each client given 3 of the 5 masters (a majority of 5): the negative control",
		Expected: "C6 MUST find 3 holders at once",
		Nodes:    5, Clients: 8, TTL: time.Second, Run: 3 * time.Second,
		Mode: workload.LockMode, Wait: 3 * time.Second, Permits: permits,
		Masters: [][]int{
			{0, 1, 2}, {2, 3, 4}, {0, 1, 3},
			{0, 1, 2}, {2, 3, 4}, {0, 1, 3},
			{0, 1, 2}, {2, 3, 4},
		},
		// On three masters, two permits need all three: allowed only when asked.
		SemaphoreOptions: []redlock.SemaphoreOption{redlock.WithEveryMaster()},
	}
	control.Expect = func(r *Result) []string {
		return want(len(r.C6) > 0, "C6 found no more than %d holders at once: the control did not fire", permits)
	}
	return []*Scenario{on, control}
}
