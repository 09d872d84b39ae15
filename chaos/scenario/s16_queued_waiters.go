package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/chaos/check"
	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/workload"
	"github.com/quorumlock/quorumlock/redlock"
)

// The bounds of scenario 16, from the masters' waiting line (see
// redlock.WithQueueLease): a waiter's place lasts Lease after its last
// renewal, and it renews every Lease/3.
const (
	// queueLease is the library's default lease of a waiter's place, L.
	queueLease = redlock.DefaultQueueLease
	// queueIdle is B_idle: a dead head keeps the key free for at most
	// 4L/3 and a round trip (2.67 s); 3.5 s leaves 0.83 s for a loaded
	// machine.
	queueIdle = 3500 * time.Millisecond
	// queueLive bounds the same with every waiter alive: the head's next
	// try is at most a heartbeat, L/3, away (where the masters disagree on
	// the head), and a third of a second more for a loaded machine.
	queueLive = queueLease/3 + time.Second/3
	// queueHandoff is what each place in line may cost besides the holds:
	// a release round, the announcement and an acquisition round, a few
	// milliseconds on loopback; 100 ms is the suite's node timeout, the
	// longest it lets one master take to answer before counting it out.
	queueHandoff = 100 * time.Millisecond
	// queueSkew is how much later than its recorded start a call may take
	// its place: the waiter records its start, then the library takes its
	// ticket on the same host's clock.
	queueSkew = 50 * time.Millisecond
	// queueOvertakes is how often a call may see the key go to calls that
	// began queueSkew or more after it: a waiter stalled by the scheduler
	// between recording its start and taking its ticket.
	queueOvertakes = 2
)

// queuedWaiters is scenario 16: eight clients, each a process of its own
// with one goroutine, wait in Lock for one key and hold it briefly, while
// the waiter at the head of the line is killed with SIGKILL and started
// again (four times, the last time two at once), one master is killed and
// comes back empty (guard on), and later another is cut from every client.
// At most two masters are out at once: a quorum is up throughout, so C5
// holds every Lock call to the line's bound.
func queuedWaiters() *Scenario {
	s := &Scenario{
		ID: "16", Name: "queued-waiters",
		Shows: "8 client processes, one goroutine each, loop Lock on one key; the longest waiter SIGKILLed and started again 1 s later, 4 times (the last time the two longest); " +
			"n4 SIGKILLed and restarted empty (guard on); n2 cut from every client for 4.5 s",
		Expected: fmt.Sprintf("C5: no Lock call waits past its place in line (holds of those ahead + %v per place + %v per waiter ahead killed) or sees the key go over %d times to calls that began %v or more after it; "+
			"the key never free while live waiters wait for over %v, or %v after a waiter's death; C1 clean, C2 0%% lost, C3 no stale write, C4 ok",
			queueHandoff, queueIdle, queueOvertakes, queueSkew, queueLive.Round(time.Millisecond), queueIdle),
		Nodes: 5, Clients: 8, TTL: time.Second, Run: 18 * time.Second,
		Guard: true, WarmUp: true,
		Mode: workload.LockMode, Wait: 15 * time.Second, Processes: true,
		Waits: &check.WaitBounds{Lease: queueLease, Idle: queueIdle, Live: queueLive, Handoff: queueHandoff, Skew: queueSkew, Overtakes: queueOvertakes},
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		// Each kill's process starts again a second later (killHeads
		// returns then). The kills are 4 s apart, more than the 2.67 s a
		// dead head may hold the line up.
		steps := []struct {
			after time.Duration // since the previous step returned
			do    func() error
		}{
			{time.Second, func() error { _, err := killHeads(ctx, e, 1, "kill 1"); return err }},
			{1500 * time.Millisecond, func() error {
				if err := e.Cluster.Kill(ctx, 4); err != nil {
					return err
				}
				e.Mark("n4 killed")
				return nil
			}},
			{time.Second, func() error {
				if err := e.Cluster.Start(ctx, 4, cluster.Ephemeral); err != nil {
					return err
				}
				e.Mark("n4 restarted")
				return nil
			}},
			// n4 is in restart quarantine for at most 3 s from here.
			{500 * time.Millisecond, func() error { _, err := killHeads(ctx, e, 1, "kill 2"); return err }},
			{2 * time.Second, func() error { // n4 votes again: cut n2 off
				if err := e.Cluster.Impair(ctx, cluster.Link{Client: cluster.AllClients, Node: 2}, cluster.Impairment{Kind: cluster.Blackhole}); err != nil {
					return err
				}
				e.Mark("n2 cut")
				return nil
			}},
			{time.Second, func() error { _, err := killHeads(ctx, e, 1, "kill 3"); return err }},
			{2500 * time.Millisecond, func() error {
				if err := e.Cluster.Heal(ctx, cluster.Link{Client: cluster.AllClients, Node: 2}); err != nil {
					return err
				}
				e.Mark("n2 healed")
				return nil
			}},
			{500 * time.Millisecond, func() error { _, err := killHeads(ctx, e, 2, "kill 4"); return err }},
		}
		for _, st := range steps {
			if err := e.Sleep(ctx, st.after); err != nil {
				return err
			}
			if err := st.do(); err != nil {
				return err
			}
		}
		if err := e.Sleep(ctx, 4*time.Second); err != nil {
			return err
		}
		m := e.marks
		noteWaits(e, [][2]time.Duration{{0, m["kill 1"]}, {m["kill 1"], m["n4 killed"]}, {m["n4 killed"], m["n2 cut"]}, {m["n2 cut"], m["n2 healed"]}, {m["n2 healed"], m["kill 4"]}, {m["kill 4"], e.History.Now()}},
			[]string{"before the faults", "after the first kill", "while n4 was down or in quarantine, with the second kill", "while n2 was cut off, with the third kill", "after n2 healed", "after the double kill"})
		return nil
	}
	s.Expect = func(r *Result) []string {
		if _, bad := marks(r, "kill 1", "n4 killed", "n4 restarted", "kill 2", "n2 cut", "kill 3", "n2 healed", "kill 4"); bad != nil {
			return bad
		}
		out := join(safe(r), noLoss(r), unstuck(r))
		// C5 judges every stretch; this only says the line moved at all.
		out = append(out, want(r.Locks >= 50, "only %d locks granted in the whole run", r.Locks)...)
		killed := 0
		for _, a := range r.Record.Attempts {
			switch {
			case a.Killed:
				killed++
			case !a.OK && !errors.Is(a.Err, context.Canceled):
				out = append(out, fmt.Sprintf("client %d's Lock call from %v ended after %v without the lock: %v",
					a.Client, a.Start.Round(time.Millisecond), a.Latency().Round(time.Millisecond), a.Err))
			}
		}
		// Each kill picks a waiter; one may have got the lock in the
		// meantime, but most must die waiting, or the scenario did not
		// test the line.
		out = append(out, want(killed >= 3, "only %d of the 5 kills hit a process waiting in Lock", killed)...)
		return out
	}
	return s
}

// controlLease is the client processes' queue lease in scenario 16a, 15
// times the library's default: a dead waiter's places outlive the run.
const controlLease = 30 * time.Second

// queuedWaitersLongLease is scenario 16a, the negative control of C5: the
// workload of scenario 16, but the client processes keep a place in line
// for controlLease without renewing it, and the waiter at the head of the
// line is killed once, with no other fault. Every master keeps the dead
// waiter's place at the head of its queue, so the live waiters behind it
// wait with the key free for the rest of the run, while C5 holds the line
// to the bounds of the default lease (scenario 16's): it MUST find the key
// left free behind a dead waiter.
func queuedWaitersLongLease() *Scenario {
	s := &Scenario{
		ID: "16a", Name: "queued-waiters-long-lease",
		Shows:    fmt.Sprintf("scenario 16's 8 client processes with a queue lease of %v; the longest waiter SIGKILLed once, and no other fault: the negative control of C5", controlLease),
		Expected: fmt.Sprintf("C5 MUST find the key free for over %v after the dead waiter's death while live waiters wait", queueIdle),

		Nodes: 5, Clients: 8, TTL: time.Second, Run: 8 * time.Second,
		Guard: true, WarmUp: true,
		Mode: workload.LockMode, Wait: 15 * time.Second, Processes: true, QueueLease: controlLease,
		Waits: &check.WaitBounds{Lease: queueLease, Idle: queueIdle, Live: queueLive, Handoff: queueHandoff, Skew: queueSkew, Overtakes: queueOvertakes},
	}
	s.Inject = func(ctx context.Context, e *Env) error {
		if err := e.Sleep(ctx, time.Second); err != nil {
			return err
		}
		// A process that got the lock the moment it was killed leaves no
		// place behind: one still in Lock whose grant had already landed on
		// a quorum of masters (Blocked) holds the key for its TTL, and its
		// place is gone from that quorum. Kill again until one dies waiting
		// with its place still in line on a quorum.
		quorum := s.Nodes/2 + 1
		hit := false
		for try := 0; try < 3 && !hit; try++ {
			kills, err := killHeads(ctx, e, 1, "kill")
			if err != nil {
				return err
			}
			for _, k := range kills {
				hit = hit || (k.Waiting && len(k.Blocked) < quorum)
			}
		}
		if !hit {
			return errors.New("three kills and none hit a process waiting in Lock with its place in line")
		}
		if err := e.Sleep(ctx, 6*time.Second); err != nil {
			return err
		}
		noteWaits(e, [][2]time.Duration{{0, e.marks["kill"]}, {e.marks["kill"], e.History.Now()}},
			[]string{"before the kill", "after the kill"})
		return nil
	}
	s.Expect = func(r *Result) []string {
		if _, bad := marks(r, "kill"); bad != nil {
			return bad
		}
		// The long lease changes only who is asked first: the lock stays
		// safe. C4's relock is not asked for: the dead waiter's place may
		// still head the line when the run ends.
		out := join(exclusive(r), fenced(r), noLoss(r))
		behind := false
		if r.C5 != nil {
			for _, g := range r.C5.Idle {
				behind = behind || g.Deaths > 0
			}
		}
		return append(out, want(behind, "negative control: C5 found no key left free past %v behind a dead waiter, so it cannot be shown to fail", queueIdle)...)
	}
	return s
}

// killHeads kills the n client processes that have waited longest in Lock
// (the head of a line ordered by arrival), each once it has waited at
// least a heartbeat's worth of a round trip, marks the moment, starts them
// again a second later, and returns what each kill found.
func killHeads(ctx context.Context, e *Env, n int, mark string) ([]workload.Kill, error) {
	var heads []workload.Waiter
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for {
		now := e.History.Now()
		heads = heads[:0]
		for _, w := range e.Procs.Waiting() {
			if now-w.Since >= 20*time.Millisecond {
				heads = append(heads, w)
			}
		}
		if len(heads) >= n {
			heads = heads[:n]
			break
		}
		if err := e.Sleep(wctx, time.Millisecond); err != nil {
			return nil, fmt.Errorf("%s: fewer than %d clients waiting in Lock", mark, n)
		}
	}
	e.Mark(mark)
	var kills []workload.Kill
	for _, h := range heads {
		k, err := e.Procs.Kill(ctx, h.Client)
		if err != nil {
			return kills, err
		}
		kills = append(kills, k)
	}
	for _, k := range kills {
		e.Notef("%s: client %d, waiting since %v, killed at %v (waiting: %v, holding: %v)", mark, k.Client,
			waitedSince(heads, k.Client).Round(time.Millisecond), k.At.Round(time.Millisecond), k.Waiting, k.Holding)
	}
	if err := e.Sleep(ctx, time.Second); err != nil {
		return kills, err
	}
	for _, k := range kills {
		if err := e.Procs.Start(k.Client); err != nil {
			return kills, err
		}
	}
	return kills, nil
}

func waitedSince(ws []workload.Waiter, client int) time.Duration {
	for _, w := range ws {
		if w.Client == client {
			return w.Since
		}
	}
	return 0
}
