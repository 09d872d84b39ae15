package scenario

import (
	"fmt"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/chaos/check"
	"github.com/quorumlock/quorumlock/chaos/history"
)

// guardOut is how long a master restarted empty stays out of the quorum
// with the restart guard on: until its uptime passes the TTL and the drift
// reserve, read from INFO in whole seconds, up to one ahead, and taken as a
// second less by the guard.
func guardOut(ttl time.Duration) time.Duration {
	return ttl + ttl/100 + 2*time.Millisecond + 2*time.Second
}

// quorumDown returns the stretches of a run during which fewer than a
// quorum of the masters could grant the key, from the faults it recorded:
// a master killed, stopped or paused, cut from every client, in restart
// quarantine (guard on), or keeping a killed client's token until it
// expires. A fault still open counts until end.
func quorumDown(s *Scenario, faults []history.Fault, end time.Duration) []check.Span {
	var out []check.Outage
	for _, f := range faults {
		if f.Node < 0 || f.Node >= s.Nodes || f.Client != history.AllClients {
			continue
		}
		to := f.End
		if f.Open() {
			to = end
		}
		switch f.Kind {
		case "killed", "stopped", "paused", "blackholed", "rejected", "replies dropped", "dead token":
			out = append(out, check.Outage{Node: f.Node, Span: check.Span{From: f.Start, To: to}})
		case "restarted":
			if s.Guard {
				out = append(out, check.Outage{Node: f.Node, Span: check.Span{From: f.Start, To: f.Start + guardOut(s.TTL)}})
			}
		}
	}
	return check.QuorumDown(s.Nodes, s.Nodes/2+1, out)
}

// w5Summary sums C5's verdict up in one line.
func w5Summary(w check.Waits) string {
	return fmt.Sprintf("C5: %d Lock calls; longest wait %v (bound %v, %d ahead, %d killed), closest to its bound %v of %v; longest free stretch while someone waited %v (allowed %v); "+
		"%d calls overtaken by later ones, at most %d times; %d stuck, %d free stretches and %d calls passed over beyond the bounds",
		w.Calls, w.Longest.Waited.Round(time.Millisecond), w.Longest.Bound.Round(time.Millisecond), w.Longest.Ahead, w.Longest.Deaths,
		w.Closest.Waited.Round(time.Millisecond), w.Closest.Bound.Round(time.Millisecond),
		w.LongestIdle.Length().Round(time.Millisecond), (w.LongestIdle.Allowed - w.LongestIdle.From).Round(time.Millisecond), w.Overtaken, w.MostOvertaken.Overtaken, len(w.Stuck), len(w.Idle), len(w.Passed))
}

// unstuck wants C5 clean, if the scenario asked for it.
func unstuck(r *Result) []string {
	if r.C5 == nil {
		return nil
	}
	var out []string
	const shown = 5
	for i, j := range r.C5.Stuck {
		if i == shown {
			out = append(out, fmt.Sprintf("C5: %d more Lock calls waited past their bound", len(r.C5.Stuck)-shown))
			break
		}
		out = append(out, fmt.Sprintf("C5: client %d waited %v in Lock from %v, past its bound of %v (%d calls ahead when it joined, %d of them killed, %d quorum returns; overtaken %d times)",
			j.Call.Client, j.Waited.Round(time.Millisecond), j.Call.Start.Round(time.Millisecond), j.Bound.Round(time.Millisecond),
			j.Ahead, j.Deaths, j.Recoveries, j.Overtaken))
	}
	for i, j := range r.C5.Passed {
		if i == shown {
			out = append(out, fmt.Sprintf("C5: %d more Lock calls passed over by later ones", len(r.C5.Passed)-shown))
			break
		}
		out = append(out, fmt.Sprintf("C5: client %d's Lock call from %v saw the key granted %d times to calls that began %v or more after it, over the %d allowed (waited %v, bound %v)",
			j.Call.Client, j.Call.Start.Round(time.Millisecond), j.Overtaken, r.Scenario.Waits.Skew, r.Scenario.Waits.Overtakes,
			j.Waited.Round(time.Millisecond), j.Bound.Round(time.Millisecond)))
	}
	for _, g := range r.C5.Idle {
		why := fmt.Sprintf("%v with every waiter alive", r.Scenario.Waits.Live)
		if g.Deaths > 0 {
			why = fmt.Sprintf("%v after the death of a waiter", r.Scenario.Waits.Idle)
		}
		out = append(out, fmt.Sprintf("C5: %s was free from %v to %v while a live waiter waited and a quorum was up, %v past its allowance (%s)",
			g.Key, g.From.Round(time.Millisecond), g.To.Round(time.Millisecond), g.Over().Round(time.Millisecond), why))
	}
	return out
}

// lockWaits returns how many Lock calls got the lock, and the median and
// longest of their waits.
func lockWaits(as []history.Attempt) (n int, median, longest time.Duration) {
	var ws []time.Duration
	for _, a := range as {
		if a.OK {
			ws = append(ws, a.Latency())
		}
	}
	if len(ws) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ws)
	return len(ws), ws[len(ws)/2], ws[len(ws)-1]
}
