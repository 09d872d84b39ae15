package scenario

import (
	"time"

	"github.com/quorumlock/quorumlock/chaos/workload"
)

// readersWriters are scenario 18 and its control. Eight clients loop
// taking an RWLock's holds on one key over five masters, three reads to
// one write, each on a majority.
//
// 18: one master is SIGSTOPped for longer than the TTL and resumed, and
// another is SIGKILLed and restarted at once, empty, with the restart
// guard on: never a writer beside another holder, and both kinds of hold
// keep being granted with a master down.
//
// 18a, the negative control: the clients are given disagreeing sets of
// three of the five masters, {n0,n1,n2} or {n2,n3,n4}, so that a quorum
// of one set (two of its three) can miss the other's entirely: C7 must
// find a writer beside another holder.
func readersWriters() []*Scenario {
	on := &Scenario{
		ID: "18", Name: "readers-writer",
		Shows:    "8 clients, RWLock holds (3 reads to 1 write), 5 masters: n1 SIGSTOPped 1.5 TTL, then n3 SIGKILLed and restarted empty, guard on",
		Expected: "C7 clean (never a writer beside another holder), reads and writes granted while a master is down, C4 ok",
		Nodes:    5, Clients: 8, TTL: time.Second, Run: 5 * time.Second,
		Guard: true, WarmUp: true,
		Mode: workload.LockMode, Wait: 3 * time.Second, ReadWrite: true,
	}
	on.Inject = pauseThenRestart(on.TTL)
	on.Expect = func(r *Result) []string {
		m, bad := marks(r, "paused", "unpausing", "restarted")
		if bad != nil {
			return bad
		}
		var reads, writes, paused int
		for _, h := range r.Record.Holds {
			if h.Shared {
				reads++
			} else {
				writes++
			}
			if h.Acquired >= m[0] && h.Acquired < m[1] {
				paused++
			}
		}
		return join(readersWriter(r), recovered(r),
			want(paused >= 5, "only %d holds granted while n1 was paused", paused),
			want(reads >= 20 && writes >= 5, "only %d reads and %d writes granted in the run", reads, writes))
	}

	control := &Scenario{
		ID: "18a", Name: "readers-writer-disagreeing-masters",
		Shows:    "8 clients, RWLock holds, each client given 3 of the 5 masters ({n0,n1,n2} or {n2,n3,n4}): the negative control",
		Expected: "C7 MUST find a writer beside another holder",
		Nodes:    5, Clients: 8, TTL: time.Second, Run: 3 * time.Second,
		Mode: workload.LockMode, Wait: 3 * time.Second, ReadWrite: true,
		Masters: twoSides(),
	}
	control.Expect = func(r *Result) []string {
		return want(len(r.C7) > 0, "C7 found no writer beside another holder: the control did not fire")
	}
	return []*Scenario{on, control}
}
