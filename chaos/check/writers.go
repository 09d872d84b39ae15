package check

import (
	"cmp"
	"slices"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Writers is checker C7, for readers-writer locks. It returns every pair of
// holds of the same key whose intervals [Acquired, End) overlap where one
// of them is not Shared: a writer beside a reader or another writer. Read
// holds may overlap each other. With no Shared hold it is Exclusion.
func Writers(holds []history.Hold) []Violation {
	byKey := map[string][]history.Hold{}
	for _, h := range holds {
		byKey[h.Key] = append(byKey[h.Key], h)
	}
	var out []Violation
	for key, hs := range byKey {
		slices.SortStableFunc(hs, func(a, b history.Hold) int { return cmp.Compare(a.Acquired, b.Acquired) })
		var open []history.Hold // holds that may still overlap the next one
		for _, h := range hs {
			open = slices.DeleteFunc(open, func(o history.Hold) bool { return o.End() <= h.Acquired })
			for _, o := range open {
				if !o.Shared || !h.Shared {
					out = append(out, Violation{Key: key, First: o, Second: h, Overlap: min(o.End(), h.End()) - h.Acquired})
				}
			}
			open = append(open, h)
		}
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return cmp.Compare(a.Second.Acquired, b.Second.Acquired) })
	return out
}
