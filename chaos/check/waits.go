package check

import (
	"cmp"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Span is a stretch of the run's clock, [From, To).
type Span struct {
	From, To time.Duration
}

// Outage is a stretch during which one master could not take part in a new
// grant of the key: killed or stopped, paused, cut from every client, in
// restart quarantine, or still holding the token of a client that was killed
// in the middle of an acquisition.
type Outage struct {
	Node int
	Span
}

// QuorumDown returns, sorted and merged, the stretches during which fewer
// than quorum of the n masters were free of outages: then no waiter can be
// granted the key, however well the lock works.
func QuorumDown(n, quorum int, outages []Outage) []Span {
	perNode := map[int][]Span{}
	for _, o := range outages {
		if o.To > o.From {
			perNode[o.Node] = append(perNode[o.Node], o.Span)
		}
	}
	type edge struct {
		at   time.Duration
		step int
	}
	var edges []edge
	for _, spans := range perNode {
		for _, s := range union(spans) {
			edges = append(edges, edge{s.From, 1}, edge{s.To, -1})
		}
	}
	// At one instant, ends before starts: touching outages do not overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.step, b.step)
	})
	var out []Span
	var from time.Duration
	outNow := 0
	for _, e := range edges {
		wasDown := n-outNow < quorum
		outNow += e.step
		down := n-outNow < quorum
		switch {
		case down && !wasDown:
			from = e.at
		case !down && wasDown && e.at > from:
			out = append(out, Span{from, e.at})
		}
	}
	return union(out)
}

// WaitBounds are what checker C5 allows a fair queue of waiters on one key.
type WaitBounds struct {
	// Lease is how long a waiter's place in line outlives its last
	// renewal: a waiter killed before it joined the line behind a dead one
	// may still find the dead one's place there (L in the design, 2 s by
	// default).
	Lease time.Duration
	// Idle is the longest the key may stay free while a live waiter waits
	// and a quorum of masters is up, counted from the death of a waiter
	// (B_idle).
	Idle time.Duration
	// Live is the longest it may stay free so when no waiter died within
	// Idle before: the next try of the line's head, a heartbeat away at
	// most.
	Live time.Duration
	// Handoff is what each place in line may cost besides the holds
	// themselves: the holder's release round, the announcement to the next
	// waiter, and its acquisition round.
	Handoff time.Duration
	// Skew is how much later than its recorded start a Lock call may take
	// its place in line (its ticket is its clock when it began waiting,
	// after a first try), and how much the clocks of its clients may differ.
	// Calls that started within Skew after another count as ahead of it.
	Skew time.Duration
	// Overtakes is how many calls that joined the line Skew or more after
	// a call may be granted the key while it waits.
	Overtakes int
}

// Judged is one Lock call that C5 judged.
type Judged struct {
	Call history.Attempt
	// Waited is how long the call waited, less the time without a quorum.
	Waited time.Duration
	// Bound is what it was allowed.
	Bound time.Duration
	// Ahead counts the other calls waiting when it joined (see Waiting).
	Ahead int
	// Deaths counts the waiters ahead of it killed in time to stall it.
	Deaths int
	// Recoveries counts the stretches without a quorum that ended while it
	// waited.
	Recoveries int
	// Overtaken counts the holds granted while it waited to calls that
	// joined the line Skew or more after it.
	Overtaken int
}

// Share returns Waited / Bound.
func (j Judged) Share() float64 {
	if j.Bound <= 0 {
		return 0
	}
	return float64(j.Waited) / float64(j.Bound)
}

// Gap is one stretch during which the key was free, a live waiter waited
// and a quorum was up.
type Gap struct {
	Key      string
	From, To time.Duration
	// Allowed is when the stretch had to end: Live after From, or Idle
	// after the death of a waiter, for the deaths that came while it was
	// still allowed (or before it began).
	Allowed time.Duration
	// Deaths counts the waiters' deaths that extended Allowed.
	Deaths int
}

// Length returns To - From.
func (g Gap) Length() time.Duration { return g.To - g.From }

// Over returns how long the stretch outlasted its allowance; <= 0 when it
// did not.
func (g Gap) Over() time.Duration { return g.To - g.Allowed }

// Waits is the result of checker C5.
type Waits struct {
	Calls int // Lock calls judged: every call that was not killed
	// Longest is the call that waited longest, Closest the one closest to
	// its bound, MostOvertaken the one overtaken most.
	Longest, Closest, MostOvertaken Judged
	// LongestIdle is the longest stretch with the key free while a live
	// waiter waited and a quorum was up.
	LongestIdle Gap
	// Overtaken counts the calls overtaken at least once.
	Overtaken int
	// Stuck are the calls that waited longer than their bound, Idle the
	// stretches over theirs, and Passed the calls overtaken more often
	// than allowed. A fair line that works has none of them.
	Stuck  []Judged
	Idle   []Gap
	Passed []Judged
}

// OK reports whether no waiter was stuck or passed over.
func (w Waits) OK() bool { return len(w.Stuck) == 0 && len(w.Idle) == 0 && len(w.Passed) == 0 }

// Waiting is checker C5: no waiter stuck longer than its bound while a
// quorum is up. It reads the Lock calls (attempts; one call may have made
// many tries), the holds, and the stretches without a quorum (QuorumDown),
// and checks two things, per key.
//
// (i) The key never stays free long while a live waiter waits and a quorum
// is up. A free key is granted to the head of the line within a round trip
// of its release (the release announces the head) or of the holder's TTL
// running out (the head retries then), and where the masters disagree on
// the head (one restarted empty, one cut off and back), within the head's
// next try, at most a heartbeat (Lease/3) away: the stretch lasts at most
// Live (Lease/3 and some slack; 1 s in scenario 16). The exception is a
// head that died: its place stays until its lease ends, at most Lease after
// its last renewal, and the next waiter notices at its next heartbeat, at
// most Lease/3 later. So after the death of a waiter the key stays free for
// at most 4·Lease/3 and a round trip: with the default lease of 2 s,
// 2.67 s. Idle adds what a loaded machine needs on top (3.5 s in scenario
// 16). A stretch may therefore last until Live after it began, or Idle
// after a death that came before that allowance ran out (or before the
// stretch began), whichever is later, and so on for the deaths within the
// allowance so extended. A herd has no such gaps: every release wakes
// everyone. A line without lease expiry stalls on a dead head for as long
// as its keys live; one that loses its head when masters disagree stalls
// with every waiter alive.
//
// (ii) Each call waits at most for those ahead of it. In a line ordered by
// when the calls began waiting, a call that joins with k others waiting
// (Ahead: calls alive when it joined, counting those that joined up to
// Skew after it, whose tickets may still be smaller) waits for the hold in
// progress, then one hold and one handoff per waiter ahead, then its own
// handoff: k+1 holds and k+1 handoffs. The holds are the run's own: the
// bound sums the k+1 longest of the holds that overlapped the wait (clipped
// to it), so a slow critical section or a holder killed while it held
// (whose hold lasts until its validity ends) is paid for as it happened,
// not guessed. Each waiter ahead of it that was killed while it waited, or
// up to Lease before it joined (its place may still be in line), may stall
// it once more by at most Idle, as in (i). Time without a quorum is not
// counted, and each return of a quorum while it waits may cost it Idle
// once more: the line's head tries again at its next heartbeat, or when the
// TTL of a dead client's token runs out. So:
//
//	waited - no quorum <= sum of the k+1 longest holds + (k+1)·Handoff + (deaths + recoveries)·Idle
//
// A fair line meets it with the margin of Handoff over its real handoffs (a
// few round trips). A herd does not, once one call loses the race for the
// key more often than the others waiting with it: each lost race costs it
// a hold and a handoff it is not allowed.
//
// (iii) Each call waits for those ahead of it, not for those behind it: at
// most Overtakes holds are granted while it waits to calls that joined Skew
// or more after it. A line FIFO within Skew has none; the allowance is for
// a waiter that took its ticket late, stalled by the scheduler between
// recording its start and asking. A herd passes a waiter over as often as
// it loses the race for the key. (ii) bounds what that costs in time, which
// with short holds may stay under the bound for a long while; (iii) sees
// the unfairness itself.
func Waiting(attempts []history.Attempt, holds []history.Hold, down []Span, b WaitBounds) Waits {
	down = union(slices.Clone(down))
	callsBy := map[string][]history.Attempt{}
	holdsBy := map[string][]history.Hold{}
	var keys []string
	for _, a := range attempts {
		if _, ok := callsBy[a.Key]; !ok {
			keys = append(keys, a.Key)
		}
		callsBy[a.Key] = append(callsBy[a.Key], a)
	}
	for _, h := range holds {
		holdsBy[h.Key] = append(holdsBy[h.Key], h)
	}
	slices.Sort(keys)
	var w Waits
	for _, k := range keys {
		w.key(k, callsBy[k], holdsBy[k], down, b)
	}
	return w
}

func (w *Waits) key(key string, calls []history.Attempt, holds []history.Hold, down []Span, b WaitBounds) {
	slices.SortStableFunc(calls, func(x, y history.Attempt) int { return cmp.Compare(x.Start, y.Start) })
	started := map[string]time.Duration{} // a hold's token -> its call's start
	for _, c := range calls {
		if c.OK && c.Token != "" {
			started[c.Token] = c.Start
		}
	}
	var deaths []time.Duration
	for _, c := range calls {
		if c.Killed {
			deaths = append(deaths, c.End)
		}
	}
	slices.Sort(deaths)

	for i, a := range calls {
		if a.Killed {
			continue
		}
		j := Judged{Call: a, Waited: a.End - a.Start - overlap(down, a.Start, a.End)}
		for n, c := range calls {
			if n == i || c.Start >= a.Start+b.Skew {
				continue
			}
			if c.End > a.Start {
				j.Ahead++
			}
			if c.Killed && c.End > a.Start-b.Lease && c.End < a.End {
				j.Deaths++
			}
		}
		for _, d := range down {
			if d.To > a.Start && d.To < a.End {
				j.Recoveries++
			}
		}
		var lengths []time.Duration
		for _, h := range holds {
			if h.Acquired < a.End && h.End() > a.Start {
				lengths = append(lengths, min(h.End(), a.End)-max(h.Acquired, a.Start))
			}
			if h.Acquired > a.Start && h.Acquired < a.End {
				if s, ok := started[h.Token]; ok && s >= a.Start+b.Skew {
					j.Overtaken++
				}
			}
		}
		slices.SortFunc(lengths, func(x, y time.Duration) int { return cmp.Compare(y, x) })
		places := j.Ahead + 1
		for _, l := range lengths[:min(places, len(lengths))] {
			j.Bound += l
		}
		j.Bound += time.Duration(places)*b.Handoff + time.Duration(j.Deaths+j.Recoveries)*b.Idle
		w.Calls++
		if j.Waited > w.Longest.Waited {
			w.Longest = j
		}
		if j.Share() > w.Closest.Share() {
			w.Closest = j
		}
		if j.Overtaken > w.MostOvertaken.Overtaken {
			w.MostOvertaken = j
		}
		if j.Overtaken > 0 {
			w.Overtaken++
		}
		if j.Waited > j.Bound {
			w.Stuck = append(w.Stuck, j)
		}
		if j.Overtaken > b.Overtakes {
			w.Passed = append(w.Passed, j)
		}
	}

	var waiting, held []Span
	for _, c := range calls {
		waiting = append(waiting, Span{c.Start, c.End})
	}
	for _, h := range holds {
		held = append(held, Span{h.Acquired, h.End()})
	}
	for _, g := range subtract(subtract(union(waiting), union(held)), down) {
		gap := Gap{Key: key, From: g.From, To: g.To, Allowed: g.From + b.Live}
		for _, d := range deaths { // sorted
			if d >= g.To || d > gap.Allowed {
				break
			}
			if d+b.Idle > gap.Allowed {
				gap.Allowed = d + b.Idle
				gap.Deaths++
			}
		}
		if gap.Length() > w.LongestIdle.Length() {
			w.LongestIdle = gap
		}
		if gap.Over() > 0 {
			w.Idle = append(w.Idle, gap)
		}
	}
}

// union sorts spans and merges those that overlap or touch; empty spans go.
func union(spans []Span) []Span {
	spans = slices.DeleteFunc(spans, func(s Span) bool { return s.To <= s.From })
	slices.SortFunc(spans, func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	var out []Span
	for _, s := range spans {
		if n := len(out); n > 0 && s.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, s.To)
			continue
		}
		out = append(out, s)
	}
	return out
}

// subtract returns a less b; both sorted and merged, as union returns them.
func subtract(a, b []Span) []Span {
	var out []Span
	j := 0
	for _, s := range a {
		from := s.From
		for j < len(b) && b[j].To <= from {
			j++
		}
		for k := j; k < len(b) && b[k].From < s.To; k++ {
			if b[k].From > from {
				out = append(out, Span{from, b[k].From})
			}
			from = max(from, b[k].To)
		}
		if from < s.To {
			out = append(out, Span{from, s.To})
		}
	}
	return out
}

// overlap returns how much of [from, to) the sorted, merged spans cover.
func overlap(spans []Span, from, to time.Duration) time.Duration {
	var d time.Duration
	for _, s := range spans {
		if lo, hi := max(s.From, from), min(s.To, to); hi > lo {
			d += hi - lo
		}
	}
	return d
}
