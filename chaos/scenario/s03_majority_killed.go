package scenario

import (
	"context"
	"time"
)

// majorityKilled is scenario 3: three of five masters are killed, so no
// quorum exists; then they come back empty.
func majorityKilled() *Scenario {
	s := &Scenario{
		ID: "03", Name: "majority-killed",
		Shows:    "3 of 5 masters SIGKILLed for 2s, then started again empty",
		Expected: "no lock granted while down, each attempt fails within a few node timeouts, C4 ok after restart",
		Nodes:    5, Clients: 4, TTL: 2 * time.Second, Run: 4500 * time.Millisecond,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, time.Second); err != nil {
			return err
		}
		for _, n := range []int{0, 1, 2} {
			if err := e.Cluster.Kill(ctx, n); err != nil {
				return err
			}
		}
		e.Mark("killed")
		if err := e.Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
		e.Mark("restarting")
		for _, n := range []int{0, 1, 2} {
			if err := e.Cluster.Start(ctx, n, s.Persistence); err != nil {
				return err
			}
		}
		return nil
	}
	s.Expect = func(r *Result) []string {
		m, bad := marks(r, "killed", "restarting")
		if bad != nil {
			return bad
		}
		during := attemptsWithin(r, m[0], m[1])
		ok := 0
		for _, a := range during {
			if a.OK {
				ok++
			}
		}
		bound := 3*s.nodeTimeout() + 500*time.Millisecond
		return join(safe(r),
			want(len(during) >= 10, "only %d attempts while the majority was down", len(during)),
			want(ok == 0, "%d of %d attempts got the lock with a majority down", ok, len(during)),
			want(maxLatency(during) <= bound, "an attempt with the majority down took %v, more than %v", maxLatency(during), bound))
	}
	return s
}
