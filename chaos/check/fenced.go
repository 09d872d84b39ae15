package check

import (
	"cmp"
	"slices"

	"github.com/quorumlock/quorumlock/chaos/history"
)

// Fencing is the result of checker C3.
type Fencing struct {
	Writes   int
	Accepted int
	Rejected int // writes the store refused for a stale fence
	// Stale are accepted writes made by a holder after a newer holder (one
	// that acquired the lock later) had already written. Fencing exists to
	// make this impossible; there must be none.
	Stale []history.Write
}

// Fenced is checker C3. It replays the fenced store's writes in the order
// the store decided them and flags each accepted write whose holder had been
// superseded: a hold of the same key acquired later had an accepted write
// before it (each key is a resource of its own, with its own fences). The
// store's own rule (accept a fence at least as high as the highest seen)
// stops such writes as long as fences grow with every acquisition; the
// checker does not trust the rule, it checks the outcome.
func Fenced(holds []history.Hold, writes []history.Write) Fencing {
	acquired := make(map[int]history.Hold, len(holds))
	for _, h := range holds {
		acquired[h.ID] = h
	}
	ws := slices.Clone(writes)
	slices.SortFunc(ws, func(a, b history.Write) int { return cmp.Compare(a.Seq, b.Seq) })
	f := Fencing{Writes: len(ws)}
	newest := map[string]history.Hold{} // per key, the latest holder that wrote
	for _, w := range ws {
		if !w.Accepted {
			f.Rejected++
			continue
		}
		f.Accepted++
		h := acquired[w.Hold]
		n, seen := newest[h.Key]
		if seen && h.ID != n.ID && h.Acquired < n.Acquired {
			f.Stale = append(f.Stale, w)
			continue
		}
		if !seen || h.Acquired > n.Acquired {
			newest[h.Key] = h
		}
	}
	return f
}
