package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/workload"
)

// lockChurn is scenario 11: the clients wait in Lock instead of polling
// with TryLock, three goroutines per client, so that a client's own line of
// waiters and the release announcements between clients both run. Two
// masters are killed and started again empty, with the restart guard on;
// once they vote again, another master is paused.
func lockChurn() *Scenario {
	s := &Scenario{
		ID: "11", Name: "lock-churn",
		Shows:    "4 clients x 3 goroutines loop Lock, critical section, Release; n3, n4 SIGKILLed and restarted empty (guard on), then n1 SIGSTOPped",
		Expected: "locks granted in every phase, at no less than half the pace before the faults while n1 is paused, no Lock call waits out its bound, C1 clean, C2 0% lost, C3 no stale write, C4 ok",
		Nodes:    5, Clients: 4, Workers: 3, TTL: time.Second, Run: 7500 * time.Millisecond,
		Guard: true, WarmUp: true,
		Mode: workload.LockMode, Wait: lockWaitBound,
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, 800*time.Millisecond); err != nil {
			return err
		}
		for _, n := range []int{3, 4} {
			if err := e.Cluster.Kill(ctx, n); err != nil {
				return err
			}
		}
		e.Mark("killed")
		if err := e.Sleep(ctx, time.Second); err != nil {
			return err
		}
		for _, n := range []int{3, 4} {
			if err := e.Cluster.Start(ctx, n, cluster.Ephemeral); err != nil {
				return err
			}
		}
		e.Mark("restarted")
		// The guard keeps n3 and n4 out of the quorum until their uptime
		// passes the TTL and the drift reserve. INFO gives it in whole
		// seconds, up to one ahead, and the guard reads it as a second less:
		// at most the window plus 2 s. Only then is another master paused,
		// so that a majority votes throughout.
		if err := e.Sleep(ctx, s.TTL+s.TTL/100+2200*time.Millisecond); err != nil {
			return err
		}
		if err := e.Cluster.Pause(ctx, 1); err != nil {
			return err
		}
		e.Mark("paused")
		if err := e.Sleep(ctx, s.TTL*3/2); err != nil {
			return err
		}
		unpausing := e.Mark("unpausing")
		if err := e.Cluster.Unpause(ctx, 1); err != nil {
			return err
		}
		noteWaits(e, [][2]time.Duration{{0, e.marks["killed"]}, {e.marks["killed"], e.marks["restarted"]},
			{e.marks["restarted"], e.marks["paused"]}, {e.marks["paused"], unpausing}},
			[]string{"before the faults", "while n3 and n4 were down", "during the restart quarantine", "while n1 was paused"})
		// The waiting went through the release announcements: n0, never
		// faulted, has the clients' subscriptions and published releases.
		subs, pubs, err := announcements(ctx, e.Cluster.Direct(0), "chaos-"+s.ID)
		switch {
		case err != nil:
			e.Failf("cannot read n0's pub/sub counts: %v", err)
		case subs < 2 || pubs < 10:
			e.Failf("the release announcements were hardly used: n0 has %d subscriptions to the key's channel and ran PUBLISH %d times", subs, pubs)
		default:
			e.Notef("n0 has %d subscriptions to the key's release channel and ran PUBLISH %d times", subs, pubs)
		}
		return nil
	}
	s.Expect = func(r *Result) []string {
		m, bad := marks(r, "killed", "restarted", "paused", "unpausing")
		if bad != nil {
			return bad
		}
		out := join(safe(r), noLoss(r))
		phases := []struct {
			name     string
			from, to time.Duration
		}{
			{"while n3 and n4 were down", m[0], m[1]},
			{"while n3 and n4 were in restart quarantine or rejoining", m[1], m[2]},
			{"while n1 was paused", m[2], m[3]},
		}
		for _, p := range phases {
			n := locksBetween(r, p.from, p.to)
			out = append(out, want(n >= 3, "only %d locks granted %s", n, p.name)...)
		}
		// A paused master answers nothing, and its connections stay open:
		// the others carry on at the pace they had before the faults, not
		// one node timeout per contended round.
		first := m[0]
		for _, h := range r.Record.Holds {
			first = min(first, h.Acquired)
		}
		before := rate(locksBetween(r, first, m[0]), m[0]-first)
		paused := rate(locksBetween(r, m[2], m[3]), m[3]-m[2])
		out = append(out, want(paused >= before/2,
			"%.0f locks/s while n1 was paused, under half the %.0f locks/s before the faults: the paused master held the rounds up", paused, before)...)
		// Waits: every Lock call that did not run into the end of the run
		// got the lock within the bound.
		for _, a := range r.Record.Attempts {
			if !a.OK && !errors.Is(a.Err, context.Canceled) {
				out = append(out, fmt.Sprintf("client %d goroutine %d waited %v in Lock from %v without getting the lock: %v",
					a.Client, a.Worker, a.Latency().Round(time.Millisecond), a.Start.Round(time.Millisecond), a.Err))
			}
		}
		return out
	}
	return s
}

// announcements reads, on a master, how many connections subscribe to
// key's release channel (as the library names it) and how many PUBLISH
// commands the master ran.
func announcements(ctx context.Context, addr, key string) (subs, pubs int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := redis.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	v, err := redis.Values(redis.DoWithTimeout(conn, 2*time.Second, "PUBSUB", "NUMSUB", channelOf(key)))
	if err != nil || len(v) != 2 {
		return 0, 0, fmt.Errorf("PUBSUB NUMSUB: %v %v", v, err)
	}
	if subs, err = redis.Int64(v[1], nil); err != nil {
		return 0, 0, err
	}
	info, err := redis.String(redis.DoWithTimeout(conn, 2*time.Second, "INFO", "commandstats"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_publish:calls="); ok {
			pubs, err = strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			return subs, pubs, err
		}
	}
	return subs, 0, nil
}

// rate is n locks over d, per second.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// lockWaitBound bounds each Lock call of scenario 11.
const lockWaitBound = 4 * time.Second

// noteWaits adds the longest Lock waits of each phase to the notes: how long
// a goroutine can stand in line, which no assertion pins down.
func noteWaits(e *Env, phases [][2]time.Duration, names []string) {
	rec := e.History.Snapshot()
	for i, p := range phases {
		var ws []time.Duration
		for _, a := range rec.Attempts {
			if a.OK && a.End >= p[0] && a.End < p[1] {
				ws = append(ws, a.Latency())
			}
		}
		if len(ws) == 0 {
			continue
		}
		slices.Sort(ws)
		e.Notef("Lock waits %s: %d granted, median %v, longest %v", names[i], len(ws),
			ws[len(ws)/2].Round(time.Millisecond), ws[len(ws)-1].Round(time.Millisecond))
	}
}
