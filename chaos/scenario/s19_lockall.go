package scenario

import (
	"time"

	"github.com/quorumlock/quorumlock/chaos/workload"
)

// keySets are scenario 19 and its control. Eight clients loop taking sets
// of three keys at once with LockAll, sets that overlap in every order:
// {a,b}, {b,a}, {b,c}, {c,a}, {a,b,c}, {c,b}.
//
// 19: one master is SIGSTOPped for longer than the TTL and resumed, and
// another is SIGKILLed and restarted at once, empty, with the restart
// guard on: never two holders of a key, and sets keep being granted
// throughout, so overlapping orders never deadlock.
//
// 19a, the negative control: the clients are given disagreeing sets of
// three of the five masters, {n0,n1,n2} or {n2,n3,n4}: C1 must find two
// holders of a key.
func keySets() []*Scenario {
	sets := [][]string{{"a", "b"}, {"b", "a"}, {"b", "c"}, {"c", "a"}, {"a", "b", "c"}, {"c", "b"}}
	on := &Scenario{
		ID: "19", Name: "key-sets",
		Shows:    "8 clients take overlapping key sets with LockAll, 5 masters: n1 SIGSTOPped 1.5 TTL, then n3 SIGKILLed and restarted empty, guard on",
		Expected: "C1 clean on every key, sets granted in every phase (no deadlock), C4 ok",
		Nodes:    5, Clients: 8, TTL: time.Second, Run: 5 * time.Second,
		Guard: true, WarmUp: true, Keys: []string{"a", "b", "c"},
		Mode: workload.LockMode, Wait: 3 * time.Second, Sets: sets,
	}
	on.Inject = pauseThenRestart(on.TTL)
	on.Expect = func(r *Result) []string {
		m, bad := marks(r, "paused", "unpausing", "restarted")
		if bad != nil {
			return bad
		}
		before, paused, after := setsBetween(r, 0, m[0]), setsBetween(r, m[0], m[1]), setsBetween(r, m[2], 1<<62)
		return join(exclusive(r), recovered(r),
			want(before >= 5, "only %d sets granted before the faults", before),
			want(paused >= 5, "only %d sets granted while n1 was paused", paused),
			want(after >= 5, "only %d sets granted after the restart", after))
	}

	control := &Scenario{
		ID: "19a", Name: "key-sets-disagreeing-masters",
		Shows:    "8 clients take overlapping key sets, each client given 3 of the 5 masters ({n0,n1,n2} or {n2,n3,n4}): the negative control",
		Expected: "C1 MUST find two holders of a key",
		Nodes:    5, Clients: 8, TTL: time.Second, Run: 3 * time.Second, Keys: []string{"a", "b", "c"},
		Mode: workload.LockMode, Wait: 3 * time.Second, Sets: sets,
		Masters: twoSides(),
	}
	control.Expect = func(r *Result) []string {
		return want(len(r.C1) > 0, "C1 found no two holders of a key: the control did not fire")
	}
	return []*Scenario{on, control}
}

// setsBetween counts the sets granted in [from, to): the distinct tokens of
// the holds acquired then.
func setsBetween(r *Result, from, to time.Duration) int {
	seen := map[string]bool{}
	for _, h := range r.Record.Holds {
		if h.Acquired >= from && h.Acquired < to {
			seen[h.Token] = true
		}
	}
	return len(seen)
}
