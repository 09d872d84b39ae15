package scenario

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/redlock"
)

// The expectations scenarios share. Each returns the problems it found.

// want returns a problem unless ok.
func want(ok bool, format string, args ...any) []string {
	if ok {
		return nil
	}
	return []string{fmt.Sprintf(format, args...)}
}

// exclusive wants C1 clean.
func exclusive(r *Result) []string {
	if len(r.C1) == 0 {
		return nil
	}
	v := r.C1[0]
	return []string{fmt.Sprintf("C1: %d overlapping holds, first: client %d (fence %d) and client %d (fence %d) overlap by %v",
		len(r.C1), v.First.Client, v.First.Fence, v.Second.Client, v.Second.Fence, v.Overlap.Round(time.Microsecond))}
}

// noLoss wants C2 at 0% lost.
func noLoss(r *Result) []string {
	return want(r.C2.Lost == 0, "C2: %d of %d acknowledged elements lost", r.C2.Lost, r.C2.Acked)
}

// fenced wants no stale write accepted by the fenced store.
func fenced(r *Result) []string {
	return want(len(r.C3.Stale) == 0, "C3: the fenced store accepted %d stale writes", len(r.C3.Stale))
}

// recovered wants C4: no failed attempt's token left, every key expiring,
// and the lock available again within one TTL plus the retry budget.
func recovered(r *Result) []string {
	var out []string
	for _, k := range r.C4.Failed {
		written := r.ScanAt - (r.Scenario.TTL - k.PTTL)
		out = append(out, fmt.Sprintf("C4: %s on n%d still holds a failed attempt's token a TTL after the faults healed; it was written at about %v: %s",
			k.Key, k.Node, written.Round(time.Millisecond), describeAttempt(r, k.Tokens)))
	}
	out = append(out, want(len(r.C4.NoTTL) == 0, "C4: %d lock keys have no expiry", len(r.C4.NoTTL))...)
	out = append(out, want(r.Live.OK, "C4: a new client did not get the lock within %v: %v", r.Live.Bound, r.Live.Err)...)
	return out
}

// describeAttempt names the attempt that used one of tokens.
func describeAttempt(r *Result, tokens []string) string {
	for _, t := range tokens {
		for _, a := range r.Record.Attempts {
			if a.Token == t {
				return fmt.Sprintf("client %d's attempt from %v to %v: %v", a.Client, a.Start.Round(time.Millisecond), a.End.Round(time.Millisecond), a.Err)
			}
		}
	}
	return "no recorded attempt used it"
}

// safe is what every scenario without an expected violation wants.
func safe(r *Result) []string {
	return join(exclusive(r), fenced(r), recovered(r))
}

// bounded wants C6 clean: never more holders of a semaphore than its permits.
func bounded(r *Result) []string {
	if len(r.C6) == 0 {
		return nil
	}
	e := r.C6[0]
	return []string{fmt.Sprintf("C6: %d acquisitions beyond %d permits, first at %v: %s",
		len(r.C6), r.Scenario.Permits, e.At.Round(time.Millisecond), holders(e.Holds))}
}

// readersWriter wants C7 clean: never a writer beside another holder.
func readersWriter(r *Result) []string {
	if len(r.C7) == 0 {
		return nil
	}
	v := r.C7[0]
	return []string{fmt.Sprintf("C7: %d pairs of holds with a writer overlap, first: %s and %s overlap by %v",
		len(r.C7), holders([]history.Hold{v.First}), holders([]history.Hold{v.Second}), v.Overlap.Round(time.Microsecond))}
}

// holders names the clients and fences of holds.
func holders(hs []history.Hold) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		kind := "exclusive"
		if h.Shared {
			kind = "shared"
		}
		parts[i] = fmt.Sprintf("client %d (%s, fence %d)", h.Client, kind, h.Fence)
	}
	return strings.Join(parts, ", ")
}

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// locksBetween counts the holds acquired in [from, to).
func locksBetween(r *Result, from, to time.Duration) int {
	n := 0
	for _, h := range r.Record.Holds {
		if h.Acquired >= from && h.Acquired < to {
			n++
		}
	}
	return n
}

// attemptsWithin returns the attempts that started at or after from and
// ended before to.
func attemptsWithin(r *Result, from, to time.Duration) []history.Attempt {
	var out []history.Attempt
	for _, a := range r.Record.Attempts {
		if a.Start >= from && a.End < to {
			out = append(out, a)
		}
	}
	return out
}

// marks returns the named marks, or a problem if Inject did not get there.
func marks(r *Result, names ...string) ([]time.Duration, []string) {
	out := make([]time.Duration, len(names))
	for i, n := range names {
		t, ok := r.Marks[n]
		if !ok {
			return nil, []string{fmt.Sprintf("the run never reached %q", n)}
		}
		out[i] = t
	}
	return out, nil
}

// caught returns the holds that were frozen at the gate.
func caught(r *Result) []history.Hold {
	var out []history.Hold
	for _, h := range r.Record.Holds {
		if h.Caught {
			out = append(out, h)
		}
	}
	return out
}

// writesOf returns the fenced writes of one hold.
func writesOf(r *Result, hold int) []history.Write {
	var out []history.Write
	for _, w := range r.Record.Writes {
		if w.Hold == hold {
			out = append(out, w)
		}
	}
	return out
}

// lostReported says whether an extension or release reported the loss.
func lostReported(h history.Hold) bool {
	lost := func(err error) bool {
		return errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrLockNotHeld)
	}
	return lost(h.ExtendErr) || lost(h.ReleaseErr)
}

// maxLatency returns the longest attempt.
func maxLatency(as []history.Attempt) time.Duration {
	var m time.Duration
	for _, a := range as {
		m = max(m, a.Latency())
	}
	return m
}
