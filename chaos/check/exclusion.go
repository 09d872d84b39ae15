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
	byKey := map[string][]history.Hold{}
	for _, h := range holds {
		byKey[h.Key] = append(byKey[h.Key], h)
	}
	var out []Violation
	for key, hs := range byKey {
		slices.SortStableFunc(hs, func(a, b history.Hold) int { return cmp.Compare(a.Acquired, b.Acquired) })
		var open []history.Hold // holds that may still overlap the next one
		for _, h := range hs {
			kept := open[:0]
			for _, o := range open {
				if o.End() > h.Acquired {
					kept = append(kept, o)
					out = append(out, Violation{Key: key, First: o, Second: h, Overlap: min(o.End(), h.End()) - h.Acquired})
				}
			}
			open = append(kept, h)
		}
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return cmp.Compare(a.Second.Acquired, b.Second.Acquired) })
	return out
}
