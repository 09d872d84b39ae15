package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/chaos/workload"
	"github.com/quorumlock/quorumlock/redlock"
)

// doExtension is scenario 12: the clients hold the lock through Do for
// three TTLs at a time while the library extends it every TTL/3.
//
// Phase 1, during the first hold: one master is SIGSTOPped for 1.5 TTL,
// and another is SIGKILLed and started again empty (restart guard on).
// Both are masters that hold the lock when the holder holds it on all five,
// as the first holder, taking it without contenders, does; a quorum of the
// masters holding the lock stays up throughout, so its extensions keep
// reaching a quorum and it must keep the lock.
//
// Phase 2, during the next hold: that holder's links to n0, n1 and n2 are
// blackholed, so its extensions reach two masters, no quorum. The library
// must cancel its function's ctx with cause ErrLockLost before the lock's
// validity ends, Do must return ErrLockLost, and the next holder, another
// client, must get a larger fence. The cut holder, told of its loss, still
// writes once more after the next holder has: the fenced store must reject
// it.
func doExtension() *Scenario {
	s := &Scenario{
		ID: "12", Name: "do-auto-extend",
		Shows:    "3 clients hold the lock 3 TTLs at a time under Do; 2 of its masters SIGSTOPped, SIGKILLed and restarted empty during one hold; the next holder cut from n0-n2",
		Expected: "the first holder keeps its lock; the cut one is told (ErrLockLost) before its validity ends, the next has a larger fence, C3 rejects the late write; C1, C2 0%, C4",
		Nodes:    5, Clients: 3, TTL: 2 * time.Second, NodeTimeout: 200 * time.Millisecond,
		Run: 9 * time.Second, Guard: true, WarmUp: true,
		Mode: workload.DoMode, Wait: 15 * time.Second, HoldFor: 6 * time.Second, LateWrite: true,
		// The first holder takes the lock alone, so on every master.
		Stagger: 200 * time.Millisecond,
	}
	cut := []int{0, 1, 2}
	s.Inject = func(ctx context.Context, e *Env) error {
		first, err := awaitHoldWhere(ctx, e, 5*time.Second, func(h history.Hold) bool { return true })
		if err != nil {
			return fmt.Errorf("no first holder: %w", err)
		}
		e.MarkAt("first acquired", first.Acquired)
		paused, killed := faultsFor(first.Masters, s.Nodes)
		e.Notef("client %d holds fence %d under Do on %v; n%d will be paused, n%d killed and restarted empty",
			first.Client, first.Fence, nodeList(first.Masters), paused, killed)
		at := func(d time.Duration) error { return e.Sleep(ctx, first.Acquired+d-e.History.Now()) }
		steps := []struct {
			at   time.Duration
			mark string
			do   func() error
		}{
			{400 * time.Millisecond, "paused", func() error { return e.Cluster.Pause(ctx, paused) }},
			{900 * time.Millisecond, "killed", func() error { return e.Cluster.Kill(ctx, killed) }},
			{1900 * time.Millisecond, "restarted", func() error { return e.Cluster.Start(ctx, killed, cluster.Ephemeral) }},
			{3400 * time.Millisecond, "unpaused", func() error { return e.Cluster.Unpause(ctx, paused) }},
		}
		for _, st := range steps {
			if err := at(st.at); err != nil {
				return err
			}
			if err := st.do(); err != nil {
				return err
			}
			e.Mark(st.mark)
		}

		victim, err := awaitHoldWhere(ctx, e, s.HoldFor+5*time.Second, func(h history.Hold) bool { return h.ID > first.ID })
		if err != nil {
			return fmt.Errorf("no holder after the first: %w", err)
		}
		e.MarkAt("victim acquired", victim.Acquired)
		// Cut between two extensions, after the first has gone through.
		if err := e.Sleep(ctx, victim.Acquired+s.TTL/2-e.History.Now()); err != nil {
			return err
		}
		for _, n := range cut {
			if err := e.Cluster.Impair(ctx, cluster.Link{Client: victim.Client, Node: n}, cluster.Impairment{Kind: cluster.Blackhole}); err != nil {
				return err
			}
		}
		cutAt := e.Mark("cut")
		e.Notef("client %d, holding fence %d under Do, cut from n0, n1 and n2", victim.Client, victim.Fence)
		// Requests that passed the links before the cut have landed by now.
		if err := e.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
		bound, boundErr := validityBound(ctx, e, "chaos-"+s.ID, victim.Token, cut, s.TTL)
		if boundErr != nil {
			e.Failf("cannot bound the cut holder's validity from n0-n2: %v", boundErr)
		} else {
			e.MarkAt("validity bound", bound)
		}
		done, err := awaitHoldWhere(ctx, e, 2*s.TTL+10*time.Second, func(h history.Hold) bool { return h.ID == victim.ID && h.Done })
		if err != nil {
			return fmt.Errorf("the cut holder's Do did not return: %w", err)
		}
		if done.Lost && boundErr == nil {
			e.Notef("client %d saw its ctx cancelled %v after the cut, %v before its validity ended at the latest; Do returned %s",
				done.Client, (done.Until - cutAt).Round(time.Millisecond), (bound - done.Until).Round(time.Millisecond), strings.ReplaceAll(fmt.Sprint(done.ReleaseErr), "\n", "; "))
		}
		for _, n := range cut {
			if err := e.Cluster.Heal(ctx, cluster.Link{Client: victim.Client, Node: n}); err != nil {
				return err
			}
		}
		e.Mark("healed")
		return nil
	}
	s.Expect = func(r *Result) []string {
		m, bad := marks(r, "first acquired", "paused", "unpaused", "victim acquired", "cut", "validity bound")
		if bad != nil {
			return bad
		}
		first, ok1 := holdAcquiredAt(r, m[0])
		victim, ok2 := holdAcquiredAt(r, m[3])
		if !ok1 || !ok2 {
			return []string{"the marked holds are not in the record"}
		}
		out := join(safe(r), noLoss(r))

		// Phase 1: the watchdog keeps the lock with a quorum of its masters.
		paused, killed := faultsFor(first.Masters, s.Nodes)
		out = append(out, want(slices.Contains(first.Masters, paused) || slices.Contains(first.Masters, killed),
			"the faults (n%d, n%d) hit none of the first holder's masters %v", paused, killed, first.Masters)...)
		out = append(out, want(!first.Lost && first.Done && first.ReleaseErr == nil,
			"the first holder lost its lock through a minority's faults: lost %v, Do returned %v", first.Lost, first.ReleaseErr)...)
		out = append(out, want(first.Released-first.Acquired >= s.HoldFor,
			"the first holder held for %v, not %v", first.Released-first.Acquired, s.HoldFor)...)
		out = append(out, want(first.Acquired < m[1] && first.Released > m[2],
			"the first hold (%v to %v) did not span the faults (%v to %v)", first.Acquired, first.Released, m[1], m[2])...)
		for _, h := range r.Record.Holds {
			out = append(out, want(!h.Lost || h.ID == victim.ID, "client %d lost the lock it acquired at %v, which no fault cut", h.Client, h.Acquired)...)
		}

		// Phase 2: the loss is reported before the validity ends.
		out = append(out, want(victim.Lost, "the cut holder's ctx was not cancelled with cause ErrLockLost")...)
		out = append(out, want(victim.Done && errors.Is(victim.ReleaseErr, redlock.ErrLockLost),
			"the cut holder's Do returned %v, not ErrLockLost", victim.ReleaseErr)...)
		out = append(out, want(victim.Lost && victim.Until > m[4] && victim.Until < m[5],
			"the cut holder saw its ctx cancelled at %v; the cut was at %v and its validity ended by %v", victim.Until, m[4], m[5])...)
		out = append(out, want(victim.Fence > 0 && first.Fence > 0, "fences not read: first %d, cut holder %d", first.Fence, victim.Fence)...)
		out = append(out, want(lossReported(r, victim), "the library's report of the loss does not name client %d's fence %d", victim.Client, victim.Fence)...)
		next, ok := nextHold(r, victim)
		if !ok {
			return append(out, "no holder after the cut one")
		}
		out = append(out, want(next.Client != victim.Client && next.Fence > victim.Fence,
			"the next holder (client %d, fence %d) after the cut one (client %d, fence %d) is not another client with a larger fence",
			next.Client, next.Fence, victim.Client, victim.Fence)...)
		var late []history.Write
		for _, w := range writesOf(r, victim.ID) {
			if w.At > victim.Until {
				late = append(late, w)
			}
		}
		out = append(out, want(len(late) == 1, "the cut holder made %d late writes, want 1", len(late))...)
		for _, w := range late {
			out = append(out, want(!w.Accepted, "C3: the cut holder's late write (fence %d) was accepted", w.Fence)...)
		}
		return out
	}
	return s
}

// faultsFor chooses the two masters to fault while a holder on masters
// holds the lock: as many of its own masters as can fail with a quorum of
// them left, the others among the rest. Auto-extension renews the key only
// where the token holds it, so a lock held on a bare quorum (a contender's
// key was on the other masters when it was taken) survives no fault of
// its own masters; with all five, it survives two.
func faultsFor(masters []int, nodes int) (paused, killed int) {
	spare := len(masters) - (nodes/2 + 1)
	var own, others []int
	for n := nodes - 1; n >= 0; n-- {
		if slices.Contains(masters, n) {
			own = append(own, n)
		} else {
			others = append(others, n)
		}
	}
	picked := append(own[:min(max(spare, 0), 2, len(own))], others...)
	return picked[0], picked[1]
}

// nodeList renders masters as "n0, n1 and n3".
func nodeList(masters []int) string {
	names := make([]string, len(masters))
	for i, n := range masters {
		names[i] = fmt.Sprintf("n%d", n)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// awaitHoldWhere waits, at most limit, for a hold that pred accepts and
// returns it.
func awaitHoldWhere(ctx context.Context, e *Env, limit time.Duration, pred func(history.Hold) bool) (history.Hold, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var got history.Hold
	err := e.History.Await(ctx, func(r *history.Record) bool {
		for _, h := range r.Holds {
			if pred(h) {
				got = h
				return true
			}
		}
		return false
	})
	return got, err
}

// holdAcquiredAt returns the hold acquired at t.
func holdAcquiredAt(r *Result, t time.Duration) (history.Hold, bool) {
	for _, h := range r.Record.Holds {
		if h.Acquired == t {
			return h, true
		}
	}
	return history.Hold{}, false
}

// nextHold returns the first hold acquired after h.
func nextHold(r *Result, h history.Hold) (history.Hold, bool) {
	var next history.Hold
	found := false
	for _, x := range r.Record.Holds {
		if x.Acquired > h.Acquired && (!found || x.Acquired < next.Acquired) {
			next, found = x, true
		}
	}
	return next, found
}

// lossReported says whether the library logged the loss of h's lock, with
// its fence, as a note of h's client.
func lossReported(r *Result, h history.Hold) bool {
	prefix := fmt.Sprintf("client %d: redlock: lock lost", h.Client)
	fence := fmt.Sprintf(" fence=%d ", h.Fence)
	for _, n := range r.Record.Notes {
		if strings.HasPrefix(n.Text, prefix) && strings.Contains(n.Text+" ", fence) {
			return true
		}
	}
	return false
}
