package check

import (
	"cmp"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Violation is a pair of holds of one key whose intervals overlap: two
// clients held the lock at once.
type Violation struct {
	Key           string
	First, Second history.Hold // First was acquired first
	Overlap       time.Duration
}

// Exclusion is checker C1. It returns every pair of holds of the same key
// whose intervals [Acquired, End) overlap, in the order of the second
// hold's acquisition. A run that kept mutual exclusion returns none.
func Exclusion(holds []history.Hold) []Violation {
	return overlapping(holds, func(a, b history.Hold) bool { return true })
}

// overlapping returns every pair of holds of the same key whose intervals
// [Acquired, End) overlap and that conflict, in the order of the second
// hold's acquisition.
func overlapping(holds []history.Hold, conflict func(a, b history.Hold) bool) []Violation {
	var out []Violation
	for key, hs := range byKey(holds) {
		var open []history.Hold // holds that may still overlap the next one
		for _, h := range hs {
			open = slices.DeleteFunc(open, func(o history.Hold) bool { return o.End() <= h.Acquired })
			for _, o := range open {
				if conflict(o, h) {
					out = append(out, Violation{Key: key, First: o, Second: h, Overlap: min(o.End(), h.End()) - h.Acquired})
				}
			}
			open = append(open, h)
		}
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return cmp.Compare(a.Second.Acquired, b.Second.Acquired) })
	return out
}

// byKey groups holds by key, each key's in the order of acquisition.
func byKey(holds []history.Hold) map[string][]history.Hold {
	out := map[string][]history.Hold{}
	for _, h := range holds {
		out[h.Key] = append(out[h.Key], h)
	}
	for _, hs := range out {
		slices.SortStableFunc(hs, func(a, b history.Hold) int { return cmp.Compare(a.Acquired, b.Acquired) })
	}
	return out
}
