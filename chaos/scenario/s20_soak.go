package scenario

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/workload"
)

// soak is scenario 20, outside make test (make chaos-soak): the faults of
// the others, rolled over every master for a long run. Every 2 to 4 s one
// master, picked at random, is SIGSTOPped for 0.8 to 2.2 s or, one time in
// three, SIGKILLed and started again empty 0.3 to 1 s later, one fault at a
// time, while 4 clients of 16 goroutines wait in Lock on 8 keys with the
// restart guard on. seed picks the faults.
func soak(run time.Duration, seed uint64) *Scenario {
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = fmt.Sprintf("chaos-20-%d", i)
	}
	s := &Scenario{
		ID: "20", Name: "soak",
		Shows:    fmt.Sprintf("4 clients x 16 goroutines loop Lock on 8 keys for %v; every 2-4 s one master SIGSTOPped 0.8-2.2 s, or SIGKILLed and restarted empty (guard on)", run),
		Expected: "C1 clean, C3 no stale write, C4 ok, C8 no call spinning, locks granted in every 30 s",
		Nodes:    5, Clients: 4, Workers: 16, Keys: keys, TTL: time.Second, Run: run,
		Guard: true, WarmUp: true, MaxOps: 1 << 20,
		Mode: workload.LockMode, Wait: lockWaitBound,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		rng := rand.New(rand.NewPCG(seed, 20))
		span := func(from, to time.Duration) time.Duration { return from + time.Duration(rng.Int64N(int64(to-from))) }
		pauses, kills := 0, 0
		defer func() { e.Notef("%d pauses and %d kills, one master at a time", pauses, kills) }()
		for run-e.History.Now() > 5*time.Second {
			if e.Sleep(ctx, span(2*time.Second, 4*time.Second)) != nil {
				return nil
			}
			n := rng.IntN(s.Nodes)
			// A fault begun is ended, whatever ctx says: the next one needs
			// this master back.
			heal := context.WithoutCancel(ctx)
			if rng.IntN(3) > 0 {
				if err := e.Cluster.Pause(ctx, n); err != nil {
					return err
				}
				pauses++
				e.Sleep(heal, span(800*time.Millisecond, 2200*time.Millisecond))
				if err := e.Cluster.Unpause(heal, n); err != nil {
					return err
				}
				continue
			}
			if err := e.Cluster.Kill(ctx, n); err != nil {
				return err
			}
			kills++
			e.Sleep(heal, span(300*time.Millisecond, time.Second))
			if err := e.Cluster.Start(heal, n, cluster.Ephemeral); err != nil {
				return err
			}
		}
		return nil
	}
	s.Expect = func(r *Result) []string {
		out := safe(r)
		const slice = 30 * time.Second
		for from := time.Duration(0); from+slice <= run; from += slice {
			n := locksBetween(r, from, from+slice)
			out = append(out, want(n > 0, "no lock granted from %v to %v", from, from+slice)...)
		}
		return out
	}
	return s
}
